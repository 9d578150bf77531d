use faros_core::token_file::parse_token_file;

use super::*;

#[test]
fn lines_are_read_back_as_written() {
    let cases = [
        (
            static_token("t1", "alice", "alice-uid", &["devs", "testers"]),
            r#"t1,alice,alice-uid,"devs,testers""#,
        ),
        (static_token("t2", "bob", "bob", &[]), "t2,bob,bob"),
        (
            static_token("t3", "a,b", "say \"hi\"", &["g"]),
            r#"t3,"a,b","say ""hi""","g""#,
        ),
    ];
    for (t, want) in &cases {
        assert_eq!(token_line(t), *want);
        assert_eq!(parse_token_file(want).unwrap(), std::slice::from_ref(t), "{want}");
    }
}

#[test]
fn a_file_is_written_then_appended_to() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokens.csv");
    let alice = static_token("t1", "alice", "alice-uid", &["devs"]);
    write_token_file(&path, std::slice::from_ref(&alice)).unwrap();
    let bob = User::random("bob", "test");
    append_token(&path, &bob.static_token()).unwrap();
    let read = parse_token_file(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(read, [alice, bob.static_token()]);
    assert!(bob.token.starts_with("test-"), "{bob:?}");
    assert_ne!(bob.token, User::random("bob", "test").token, "tokens are random");
    assert!(!format!("{bob:?}").contains(&bob.token), "Debug never prints the token");
    assert!(append_token(&dir.path().join("missing.csv"), &bob.static_token()).is_err());
}

#[test]
fn run_ids_are_dns_label_safe() {
    let id = run_id();
    assert_eq!(id.len(), 5);
    assert!(id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()), "{id}");
}
