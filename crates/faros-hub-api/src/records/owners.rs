//! How many live records one caller holds, IO-free: the bound on what a signed-in user (or a script
//! with one token) can make the hub store. Each replica counts the records it made; a caller's
//! oldest record beyond its kind's cap ([`super::Kind::cap_per_owner`]) is deleted when a new one
//! is made, so a user who signs in again and again, or opens MCP session after MCP session, costs
//! at most the cap per replica, whatever the records' lifetime.

use std::collections::{HashMap, VecDeque};

use jiff::Timestamp;

use super::kind::Kind;

/// The records each owner made through this replica, oldest first.
#[derive(Debug, Default)]
pub struct Owners {
    held: HashMap<(Kind, String), VecDeque<(String, Timestamp)>>,
}

impl Owners {
    /// Counts record `name` (until `expires`) as `owner`'s; returns the names of `owner`'s records
    /// to delete so that no more than `cap` live ones remain, oldest first.
    pub fn add(
        &mut self,
        kind: Kind,
        owner: &str,
        name: &str,
        expires: Timestamp,
        now: Timestamp,
        cap: usize,
    ) -> Vec<String> {
        // Owners whose records have all expired are forgotten, so the table stays as large as the
        // set of callers with live records.
        self.held.retain(|_, names| {
            names.retain(|(_, e)| *e > now);
            !names.is_empty()
        });
        let names = self.held.entry((kind, owner.to_string())).or_default();
        names.retain(|(n, _)| n != name);
        names.push_back((name.to_string(), expires));
        let excess = names.len().saturating_sub(cap.max(1));
        names.drain(..excess).map(|(n, _)| n).collect()
    }

    /// Forgets record `name` (deleted or taken).
    pub fn remove(&mut self, name: &str) {
        for names in self.held.values_mut() {
            names.retain(|(n, _)| n != name);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn each_owner_keeps_at_most_the_cap_of_each_kind() {
        let at = |s: i64| Timestamp::from_second(s).unwrap();
        let mut owners = Owners::default();
        /// (kind, owner, name, expires, now, cap, evicted)
        type Step<'a> = (Kind, &'a str, &'a str, i64, i64, usize, Vec<&'a str>);
        let steps: Vec<Step> = vec![
            (Kind::Session, "alice", "s1", 100, 0, 2, vec![]),
            (Kind::Session, "alice", "s2", 100, 0, 2, vec![]),
            // The third pushes out the oldest.
            (Kind::Session, "alice", "s3", 100, 0, 2, vec!["s1"]),
            // Another owner, another kind: counted apart.
            (Kind::Session, "bob", "s4", 100, 0, 2, vec![]),
            (Kind::Mcp, "alice", "m1", 100, 0, 2, vec![]),
            // The same name again is one record.
            (Kind::Session, "alice", "s3", 100, 0, 2, vec![]),
            // Expired records do not count.
            (Kind::Session, "alice", "s5", 300, 200, 2, vec![]),
            (Kind::Session, "alice", "s6", 300, 200, 2, vec![]),
            (Kind::Session, "alice", "s7", 300, 200, 2, vec!["s5"]),
        ];
        for (kind, owner, name, expires, now, cap, evicted) in steps {
            assert_eq!(
                owners.add(kind, owner, name, at(expires), at(now), cap),
                evicted,
                "{kind:?} {owner} {name}"
            );
        }
        owners.remove("s6");
        assert_eq!(
            owners.add(Kind::Session, "alice", "s8", at(300), at(200), 2),
            Vec::<String>::new()
        );
        assert!(!owners.held.contains_key(&(Kind::Session, "bob".to_string())));
    }
}
