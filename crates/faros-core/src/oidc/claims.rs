//! A verified token's claims → the user, with kube-apiserver's rules.

use serde_json::{Map, Value};

use super::OidcSettings;
use crate::user::UserInfo;

/// Tolerated clock skew for `exp` and `nbf`.
pub const LEEWAY_SECONDS: i64 = 30;

/// The user a verified token's claims stand for, or why they are not acceptable. `now` in Unix
/// seconds. Reasons name claims, never their values. `system:authenticated` is the caller's to add
/// (as kube's union authenticator does).
pub fn user_from_claims(settings: &OidcSettings, claims: &Map<String, Value>, now: i64) -> Result<UserInfo, String> {
    if claims.get("iss").and_then(Value::as_str) != Some(settings.issuer_url.as_str()) {
        return Err("the token's issuer is not the configured issuer".into());
    }
    let audience_ok = match claims.get("aud") {
        Some(Value::String(aud)) => *aud == settings.client_id,
        Some(Value::Array(auds)) => auds.iter().any(|a| a.as_str() == Some(settings.client_id.as_str())),
        _ => false,
    };
    if !audience_ok {
        return Err("the token's audience does not include the configured client ID".into());
    }
    let exp = claims
        .get("exp")
        .and_then(Value::as_i64)
        .ok_or("the token has no numeric exp claim")?;
    if now > exp.saturating_add(LEEWAY_SECONDS) {
        return Err("the token has expired".into());
    }
    if let Some(nbf) = claims.get("nbf") {
        let nbf = nbf.as_i64().ok_or("the token's nbf claim is not a number")?;
        if now.saturating_add(LEEWAY_SECONDS) < nbf {
            return Err("the token is not valid yet (nbf)".into());
        }
    }
    let claim = settings.username_claim.as_str();
    let username = claims
        .get(claim)
        .and_then(Value::as_str)
        .filter(|u| !u.is_empty())
        .ok_or_else(|| format!("the token has no string claim {claim:?}"))?;
    if claim == "email" {
        match claims.get("email_verified") {
            None | Some(Value::Bool(true)) => {}
            Some(_) => return Err("the token's email is not verified".into()),
        }
    }
    let groups = match settings.groups_claim.as_deref() {
        None => Vec::new(),
        Some(name) => match claims.get(name) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(group)) => vec![group.clone()],
            Some(Value::Array(items)) => items
                .iter()
                .map(|g| g.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| format!("the token's {name:?} claim is not a list of strings"))?,
            Some(_) => {
                return Err(format!(
                    "the token's {name:?} claim is not a string or a list of strings"
                ));
            }
        },
    };
    let group_prefix = settings.groups_prefix.as_deref().unwrap_or_default();
    let username = format!("{}{username}", settings.effective_username_prefix());
    let groups: Vec<String> = groups.into_iter().map(|g| format!("{group_prefix}{g}")).collect();
    // `system:` names are Kubernetes' and kcp's own (ServiceAccounts, `system:masters`, the
    // components' groups): an identity provider that could hand them out would make anyone who
    // edits a profile or a group there a ServiceAccount or a cluster admin. Refused as the
    // structured authentication configuration of kube-apiserver refuses them, whatever the prefix.
    if username.starts_with(RESERVED_PREFIX) {
        return Err(format!(
            "the token's {claim:?} claim maps to a user name starting with {RESERVED_PREFIX:?}, which is reserved"
        ));
    }
    if groups.iter().any(|g| g.starts_with(RESERVED_PREFIX)) {
        return Err(format!(
            "the token's groups claim maps to a group starting with {RESERVED_PREFIX:?}, which is reserved \
             (set a groups prefix such as \"oidc:\")"
        ));
    }
    Ok(UserInfo {
        username,
        groups,
        ..Default::default()
    })
}

/// The prefix of the names Kubernetes and kcp keep for themselves.
pub const RESERVED_PREFIX: &str = "system:";

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    const ISSUER: &str = "https://issuer.example";
    const NOW: i64 = 1_800_000_000;

    fn settings() -> OidcSettings {
        OidcSettings::new(ISSUER, "faros")
    }

    fn claims(extra: Value) -> Map<String, Value> {
        let mut base = json!({"iss": ISSUER, "aud": "faros", "sub": "u-1", "exp": NOW + 60});
        let (Value::Object(base_map), Value::Object(extra)) = (&mut base, extra) else {
            unreachable!("both are objects")
        };
        for (k, v) in extra {
            if v.is_null() {
                base_map.remove(&k);
            } else {
                base_map.insert(k, v);
            }
        }
        base.as_object().unwrap().clone()
    }

    type Mapped = Result<(String, Vec<String>), String>;

    fn user(settings: &OidcSettings, extra: Value) -> Mapped {
        user_from_claims(settings, &claims(extra), NOW).map(|u| (u.username, u.groups))
    }

    fn groups(gs: &[&str]) -> Vec<String> {
        gs.iter().map(|g| g.to_string()).collect()
    }

    #[test]
    fn claim_mapping_table() {
        let email = OidcSettings {
            username_claim: "email".into(),
            groups_claim: Some("groups".into()),
            groups_prefix: Some("oidc:".into()),
            ..settings()
        };
        let sub = settings();
        let unprefixed = OidcSettings {
            groups_prefix: None,
            ..email.clone()
        };
        let system_prefix = OidcSettings {
            username_prefix: Some("system:".into()),
            ..settings()
        };
        let cases: Vec<(&str, &OidcSettings, Value, Mapped)> = vec![
            (
                "sub with the default prefix, no groups claim configured",
                &sub,
                json!({"groups": ["ignored"]}),
                Ok(("https://issuer.example#u-1".into(), groups(&[]))),
            ),
            (
                "email, verified, prefixed groups",
                &email,
                json!({"email": "a@example.com", "email_verified": true, "groups": ["dev", "ops"]}),
                Ok(("a@example.com".into(), groups(&["oidc:dev", "oidc:ops"]))),
            ),
            (
                "email without email_verified, a single group string",
                &email,
                json!({"email": "a@example.com", "groups": "dev"}),
                Ok(("a@example.com".into(), groups(&["oidc:dev"]))),
            ),
            (
                "email not verified",
                &email,
                json!({"email": "a@example.com", "email_verified": false}),
                Err("the token's email is not verified".into()),
            ),
            (
                "email_verified as a string",
                &email,
                json!({"email": "a@example.com", "email_verified": "true"}),
                Err("the token's email is not verified".into()),
            ),
            (
                "no email claim",
                &email,
                json!({}),
                Err("the token has no string claim \"email\"".into()),
            ),
            (
                "groups of the wrong type",
                &email,
                json!({"email": "a@example.com", "groups": [1, 2]}),
                Err("the token's \"groups\" claim is not a list of strings".into()),
            ),
            (
                "groups an object",
                &email,
                json!({"email": "a@example.com", "groups": {"a": 1}}),
                Err("the token's \"groups\" claim is not a string or a list of strings".into()),
            ),
            (
                "a system: user name from the email claim",
                &email,
                json!({"email": "system:serviceaccount:default:deployer"}),
                Err("the token's \"email\" claim maps to a user name starting with \"system:\", which is reserved".into()),
            ),
            (
                "a system: group without a prefix",
                &unprefixed,
                json!({"email": "a@example.com", "groups": ["dev", "system:masters"]}),
                Err("the token's groups claim maps to a group starting with \"system:\", which is reserved (set a groups prefix such as \"oidc:\")".into()),
            ),
            (
                "a system: group behind a prefix is the prefix's",
                &email,
                json!({"email": "a@example.com", "groups": ["system:masters"]}),
                Ok(("a@example.com".into(), groups(&["oidc:system:masters"]))),
            ),
            (
                "a prefix that is itself system:",
                &system_prefix,
                json!({}),
                Err("the token's \"sub\" claim maps to a user name starting with \"system:\", which is reserved".into()),
            ),
            (
                "empty sub",
                &sub,
                json!({"sub": ""}),
                Err("the token has no string claim \"sub\"".into()),
            ),
        ];
        for (what, s, extra, want) in cases {
            assert_eq!(user(s, extra), want, "{what}");
        }
    }

    #[test]
    fn issuer_audience_and_time_table() {
        let expired = "the token has expired".to_string();
        let audience = "the token's audience does not include the configured client ID".to_string();
        let cases: Vec<(&str, Value, Option<String>)> = vec![
            ("aud string", json!({}), None),
            (
                "aud array containing the client",
                json!({"aud": ["other", "faros"]}),
                None,
            ),
            ("aud other", json!({"aud": "other"}), Some(audience.clone())),
            (
                "aud array without the client",
                json!({"aud": ["other"]}),
                Some(audience.clone()),
            ),
            ("no aud", json!({"aud": null}), Some(audience)),
            (
                "other issuer",
                json!({"iss": "https://evil.example"}),
                Some("the token's issuer is not the configured issuer".into()),
            ),
            ("exp within the leeway", json!({"exp": NOW - LEEWAY_SECONDS}), None),
            (
                "exp past the leeway",
                json!({"exp": NOW - LEEWAY_SECONDS - 1}),
                Some(expired),
            ),
            (
                "no exp",
                json!({"exp": null}),
                Some("the token has no numeric exp claim".into()),
            ),
            ("nbf within the leeway", json!({"nbf": NOW + LEEWAY_SECONDS}), None),
            (
                "nbf in the future",
                json!({"nbf": NOW + LEEWAY_SECONDS + 1}),
                Some("the token is not valid yet (nbf)".into()),
            ),
        ];
        for (what, extra, want) in cases {
            assert_eq!(user(&settings(), extra).err(), want, "{what}");
        }
    }
}
