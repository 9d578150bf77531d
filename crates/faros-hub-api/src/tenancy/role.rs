//! A caller's standing in a workspace, as the membership RBAC grants it ([`super::rbac`]) and as
//! every decision of membership answers it ([`super::access`], [`super::index`]). Its own module,
//! so that those can all name it without importing each other.

/// A caller's standing in a workspace. `Admin` implies `Member`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Member,
    Admin,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Member => "member",
            Role::Admin => "admin",
        }
    }
}
