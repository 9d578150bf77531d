//! `faros-provider-quickstart [init|serve]`.

fn main() -> std::process::ExitCode {
    faros_provider_quickstart::app().main()
}
