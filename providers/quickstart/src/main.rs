//! `faros-provider-quickstart [init|serve]`.

/// jemalloc, as in every faros server binary (docs/benchmarks.md#allocator).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    faros_provider_quickstart::app().main()
}
