//! kube-apiserver's / kcp's `--token-auth-file` format: the parser lives in
//! [`faros_core::token_file`] (the hub API reads the same file); this adds the conversion to the
//! server's [`UserInfo`].

pub use faros_core::token_file::{StaticToken, TokenFileError, parse_token_file};

use super::{GROUP_AUTHENTICATED, UserInfo};

/// The identity `token` authenticates as, including `system:authenticated`.
pub fn user_info(token: &StaticToken) -> UserInfo {
    let mut user = UserInfo {
        username: token.user.clone(),
        uid: token.uid.clone(),
        groups: token.groups.clone(),
        extra: Default::default(),
    };
    user.ensure_group(GROUP_AUTHENTICATED);
    user
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn user_info_adds_authenticated_once() {
        let cases = [
            (
                "t1,alice,1,\"dev,system:authenticated\"",
                vec!["dev", "system:authenticated"],
            ),
            ("t1,bob,,", vec!["system:authenticated"]),
            ("t1,carol,3,\"ops\"", vec!["ops", "system:authenticated"]),
        ];
        for (line, want) in cases {
            let tokens = parse_token_file(line).unwrap();
            assert_eq!(user_info(&tokens[0]).groups, want, "{line}");
        }
        let alice = user_info(&parse_token_file("t1,alice,1001").unwrap()[0]);
        assert_eq!((alice.username.as_str(), alice.uid.as_str()), ("alice", "1001"));
    }
}
