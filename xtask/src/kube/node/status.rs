//! A Pod's status from what the node knows of its containers, without IO: phase, the conditions
//! Deployments and `helm --wait` read (PodScheduled, Initialized, ContainersReady, Ready), every
//! container's state, and the Pod's address.

use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting, ContainerStatus,
    PodCondition, PodIP, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

/// One container as the node sees it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Run {
    Waiting {
        reason: String,
        message: String,
    },
    Running {
        since: Timestamp,
    },
    Exited {
        code: i32,
        since: Timestamp,
        until: Timestamp,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Container {
    pub name: String,
    pub image: String,
    pub run: Run,
    pub ready: bool,
    pub started: bool,
    pub restarts: i32,
}

/// The Pod as the node sees it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Observed {
    pub init: Vec<Container>,
    pub containers: Vec<Container>,
    /// `Never` or `OnFailure`: containers that exit stay exited.
    pub restart_never: bool,
    pub pod_ip: String,
    pub started: Timestamp,
}

fn state(run: &Run) -> ContainerState {
    match run {
        Run::Waiting { reason, message } => ContainerState {
            waiting: Some(ContainerStateWaiting {
                reason: Some(reason.clone()),
                message: Some(message.clone()).filter(|m| !m.is_empty()),
            }),
            ..Default::default()
        },
        Run::Running { since } => ContainerState {
            running: Some(ContainerStateRunning {
                started_at: Some(Time(*since)),
            }),
            ..Default::default()
        },
        Run::Exited { code, since, until } => ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code: *code,
                reason: Some(if *code == 0 { "Completed" } else { "Error" }.into()),
                started_at: Some(Time(*since)),
                finished_at: Some(Time(*until)),
                ..Default::default()
            }),
            ..Default::default()
        },
    }
}

fn statuses(containers: &[Container]) -> Vec<ContainerStatus> {
    containers
        .iter()
        .map(|c| ContainerStatus {
            name: c.name.clone(),
            image: c.image.clone(),
            image_id: String::new(),
            ready: c.ready,
            started: Some(c.started),
            restart_count: c.restarts,
            state: Some(state(&c.run)),
            ..Default::default()
        })
        .collect()
}

fn exited(c: &Container) -> Option<i32> {
    match c.run {
        Run::Exited { code, .. } => Some(code),
        _ => None,
    }
}

/// The status to write.
pub(crate) fn status(o: &Observed, now: Timestamp) -> PodStatus {
    let initialized = o.init.iter().all(|c| exited(c) == Some(0));
    let ready = initialized && o.containers.iter().all(|c| c.ready);
    let failed_init = o.init.iter().any(|c| exited(c).is_some_and(|e| e != 0)) && o.restart_never;
    let all_exited: Option<Vec<i32>> = o.containers.iter().map(exited).collect();
    let phase = match (&all_exited, failed_init) {
        (_, true) => "Failed",
        (Some(codes), _) if o.restart_never && codes.iter().all(|c| *c == 0) => "Succeeded",
        (Some(_), _) if o.restart_never => "Failed",
        _ if initialized && o.containers.iter().any(|c| matches!(c.run, Run::Running { .. })) => "Running",
        _ if initialized && all_exited.is_some() => "Running",
        _ => "Pending",
    };
    let condition = |kind: &str, ok: bool| PodCondition {
        type_: kind.into(),
        status: if ok { "True" } else { "False" }.into(),
        last_transition_time: Some(Time(now)),
        ..Default::default()
    };
    PodStatus {
        phase: Some(phase.into()),
        conditions: Some(vec![
            condition("PodScheduled", true),
            condition("Initialized", initialized),
            condition("ContainersReady", ready),
            condition("Ready", ready),
        ]),
        init_container_statuses: Some(statuses(&o.init)).filter(|s| !s.is_empty()),
        container_statuses: Some(statuses(&o.containers)),
        pod_ip: Some(o.pod_ip.clone()),
        pod_ips: Some(vec![PodIP { ip: o.pod_ip.clone() }]),
        host_ip: Some(o.pod_ip.clone()),
        start_time: Some(Time(o.started)),
        ..Default::default()
    }
}

/// Whether two statuses say the same, transition times aside (only changes are written).
pub(crate) fn same(a: &PodStatus, b: &PodStatus) -> bool {
    let strip = |s: &PodStatus| {
        let mut s = s.clone();
        for c in s.conditions.iter_mut().flatten() {
            c.last_transition_time = None;
        }
        s
    };
    strip(a) == strip(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(run: Run, ready: bool) -> Container {
        Container {
            name: "c".into(),
            image: "i".into(),
            run,
            ready,
            started: true,
            restarts: 0,
        }
    }

    #[test]
    fn phases_and_conditions() {
        let t = Timestamp::UNIX_EPOCH;
        let running = Run::Running { since: t };
        let exited = |code| Run::Exited {
            code,
            since: t,
            until: t,
        };
        let waiting = Run::Waiting {
            reason: "ContainerCreating".into(),
            message: String::new(),
        };
        struct Case {
            name: &'static str,
            init: Vec<Container>,
            containers: Vec<Container>,
            never: bool,
            phase: &'static str,
            ready: bool,
        }
        let cases = [
            Case {
                name: "creating",
                init: vec![],
                containers: vec![c(waiting.clone(), false)],
                never: false,
                phase: "Pending",
                ready: false,
            },
            Case {
                name: "init still running",
                init: vec![c(running.clone(), false)],
                containers: vec![c(waiting, false)],
                never: false,
                phase: "Pending",
                ready: false,
            },
            Case {
                name: "running, not ready",
                init: vec![c(exited(0), false)],
                containers: vec![c(running.clone(), false)],
                never: false,
                phase: "Running",
                ready: false,
            },
            Case {
                name: "running and ready",
                init: vec![],
                containers: vec![c(running, true)],
                never: false,
                phase: "Running",
                ready: true,
            },
            Case {
                name: "test pod passed",
                init: vec![],
                containers: vec![c(exited(0), false)],
                never: true,
                phase: "Succeeded",
                ready: false,
            },
            Case {
                name: "test pod failed",
                init: vec![],
                containers: vec![c(exited(7), false)],
                never: true,
                phase: "Failed",
                ready: false,
            },
            Case {
                name: "failed init, never restarted",
                init: vec![c(exited(1), false)],
                containers: vec![c(
                    Run::Waiting {
                        reason: "PodInitializing".into(),
                        message: String::new(),
                    },
                    false,
                )],
                never: true,
                phase: "Failed",
                ready: false,
            },
        ];
        for case in cases {
            let s = status(
                &Observed {
                    init: case.init,
                    containers: case.containers,
                    restart_never: case.never,
                    pod_ip: "198.18.0.2".into(),
                    started: t,
                },
                t,
            );
            assert_eq!(s.phase.as_deref(), Some(case.phase), "{}", case.name);
            let cond = |k: &str| {
                s.conditions
                    .iter()
                    .flatten()
                    .find(|c| c.type_ == k)
                    .map(|c| c.status.clone())
            };
            let want = if case.ready { "True" } else { "False" };
            assert_eq!(cond("Ready").as_deref(), Some(want), "{}", case.name);
            assert_eq!(cond("ContainersReady").as_deref(), Some(want), "{}", case.name);
            assert_eq!(s.pod_ip.as_deref(), Some("198.18.0.2"));
        }
    }
}
