//! Renewal against an IdP that rotates refresh tokens; a separate file because it drives
//! [`crate::portal::session::Sessions`], which itself depends on [`super`].

#![allow(clippy::unwrap_used)]
use std::sync::Arc;

use super::*;
use crate::catalog::clock::{Clock, ManualClock};
use crate::portal::session::{SessionSettings, Sessions};

fn at(s: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + s).unwrap()
}

fn grant(issued: i64, expires: i64, refresh: bool, renewing_until: Option<i64>) -> OidcGrant {
    OidcGrant {
        refresh_token: refresh.then(|| "rt".to_string()),
        issued: at(issued),
        expires: at(expires),
        renewing_until: renewing_until.map(at),
    }
}

/// An IdP that rotates refresh tokens and, like oidc-provider, revokes the grant when a spent
/// one comes back.
#[derive(Default)]
struct RotatingIdp {
    state: std::sync::Mutex<IdpState>,
    clock: std::sync::OnceLock<Arc<ManualClock>>,
}

#[derive(Default)]
struct IdpState {
    current: String,
    spent: Vec<String>,
    revoked: bool,
    grants: usize,
}

impl Refresher for RotatingIdp {
    fn refresh<'a>(&'a self, refresh_token: &'a str, _user: &'a str) -> BoxFuture<'a, Result<Renewed, RenewError>> {
        Box::pin(async move {
            // Let the other requests run while this one is at the IdP.
            for _ in 0..5 {
                tokio::task::yield_now().await;
            }
            let mut st = self.state.lock().unwrap();
            if st.spent.iter().any(|t| t == refresh_token) {
                st.revoked = true;
            }
            if st.revoked || st.current != refresh_token {
                return Err(RenewError::Refused("invalid_grant".into()));
            }
            st.spent.push(refresh_token.to_string());
            st.grants += 1;
            st.current = format!("rt{}", st.grants);
            let now = self.clock.get().unwrap().now();
            Ok(Renewed {
                id_token: format!("id{}", st.grants),
                refresh_token: Some(st.current.clone()),
                issued: now,
                expires: now + SignedDuration::from_secs(60),
            })
        })
    }

    fn lease(&self) -> Duration {
        Duration::from_secs(30)
    }
}

#[tokio::test]
async fn concurrent_requests_spend_a_rotating_refresh_token_once() {
    let clock = Arc::new(ManualClock::new("2026-01-01T00:00:00Z".parse().unwrap()));
    let records = Records::in_process(clock.clone());
    let sessions = Sessions::new(records.clone(), SessionSettings::default());
    let idp = RotatingIdp::default();
    idp.clock.set(clock.clone()).ok();
    idp.state.lock().unwrap().current = "rt0".into();
    let now = clock.now();
    let grant = OidcGrant {
        refresh_token: Some("rt0".into()),
        issued: now,
        expires: now + SignedDuration::from_secs(60),
        renewing_until: None,
    };
    let (handle, _) = sessions
        .create_with("id0".into(), "alice".into(), Some(grant))
        .await
        .unwrap();
    for round in 1..=3 {
        // Within the skew (30 s of a 60 s token): due.
        clock.advance(Duration::from_secs(45));
        let racers = (0..16).map(|_| renew(&records, &handle, &idp));
        for got in futures::future::join_all(racers).await {
            let got = got.unwrap().expect("the session lives on");
            assert!(
                got.value.credential == format!("id{round}") || got.value.credential == format!("id{}", round - 1),
                "round {round}: {}",
                got.value.credential
            );
        }
        let (grants, revoked) = {
            let st = idp.state.lock().unwrap();
            (st.grants, st.revoked)
        };
        assert_eq!((grants, revoked), (round, false), "round {round}: one spend");
        let (_, s) = sessions.lookup(&handle).await.unwrap().unwrap();
        assert_eq!(s.credential, format!("id{round}"));
        let g = s.oidc.unwrap();
        assert_eq!(g.refresh_token, Some(format!("rt{round}")), "the rotated token is kept");
        assert_eq!(g.renewing_until, None, "the lease is released");
    }
    // The IdP refuses (the user was disabled): the session ends.
    idp.state.lock().unwrap().revoked = true;
    clock.advance(Duration::from_secs(45));
    assert!(renew(&records, &handle, &idp).await.unwrap().is_none());
    assert!(sessions.lookup(&handle).await.unwrap().is_none(), "the record is gone");
}

#[test]
fn skew_is_a_minute_or_half_the_lifetime() {
    for (issued, expires, want) in [(0, 3600, 60), (0, 10, 5), (0, 121, 60), (0, 0, 0), (10, 0, 0)] {
        assert_eq!(
            skew(&grant(issued, expires, true, None)),
            SignedDuration::from_secs(want),
            "{issued}..{expires}"
        );
    }
}

#[test]
fn decisions() {
    use Step::*;
    for (now, g, want, why) in [
        (0, grant(0, 3600, true, None), Keep, "fresh"),
        (3539, grant(0, 3600, true, None), Keep, "not yet within the skew"),
        (3540, grant(0, 3600, true, None), Renew, "within the skew"),
        (4000, grant(0, 3600, true, None), Renew, "expired: renewed all the same"),
        (
            3540,
            grant(0, 3600, false, None),
            Keep,
            "no refresh token: the session ends with the token",
        ),
        (
            4000,
            grant(0, 3600, false, None),
            Keep,
            "…and its token is refused by the authenticator",
        ),
        (
            3550,
            grant(0, 3600, true, Some(3560)),
            Keep,
            "another renews; the token still holds",
        ),
        (
            3600,
            grant(0, 3600, true, Some(3610)),
            Wait,
            "another renews; the token has expired",
        ),
        (
            3560,
            grant(0, 3600, true, Some(3560)),
            Renew,
            "a lapsed lease is taken over",
        ),
        (
            6,
            grant(0, 10, true, None),
            Renew,
            "short tokens: after half their lifetime",
        ),
        (4, grant(0, 10, true, None), Keep, "short tokens: before"),
    ] {
        assert_eq!(decide(at(now), &g), want, "{why}");
    }
}
