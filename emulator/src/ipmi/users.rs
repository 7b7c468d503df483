//! IPMI users and privilege levels.
//!
//! RAKP keys its HMACs with the clear password, which a bcrypt htpasswd
//! cannot give back; IPMI users are therefore configured apart from the
//! Redfish accounts: `[[ipmi.users]]` in the config, or `--ipmi-user
//! NAME:PASSWORD[:PRIVILEGE]`. Without any, one user `admin` with the
//! password `password` at ADMINISTRATOR serves (virtualbmc's default), so
//! a zero-setup emulator answers `ipmitool -U admin -P password`.
//! The privilege levels grant what the Redfish roles of the same powers
//! do: USER reads (ReadOnly), OPERATOR acts on the machine (Operator),
//! ADMINISTRATOR also manages the BMC (Administrator).

/// IPMI privilege levels, ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Privilege {
    Callback = 1,
    User = 2,
    Operator = 3,
    Administrator = 4,
    Oem = 5,
}

impl Privilege {
    pub fn from_u8(v: u8) -> Option<Privilege> {
        match v {
            1 => Some(Privilege::Callback),
            2 => Some(Privilege::User),
            3 => Some(Privilege::Operator),
            4 => Some(Privilege::Administrator),
            5 => Some(Privilege::Oem),
            _ => None,
        }
    }

    /// Parses `user`, `operator`, `administrator` (or `admin`),
    /// case-insensitively.
    pub fn parse(s: &str) -> Option<Privilege> {
        match s.to_ascii_lowercase().as_str() {
            "callback" => Some(Privilege::Callback),
            "user" => Some(Privilege::User),
            "operator" => Some(Privilege::Operator),
            "administrator" | "admin" => Some(Privilege::Administrator),
            _ => None,
        }
    }
}

/// One IPMI user.
#[derive(Clone, PartialEq, Eq)]
pub struct User {
    pub name: Vec<u8>,
    pub password: Vec<u8>,
    pub privilege: Privilege,
}

impl std::fmt::Debug for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("User")
            .field("name", &String::from_utf8_lossy(&self.name))
            .field("privilege", &self.privilege)
            .finish()
    }
}

/// The most user slots a channel has (ipmitool's `user list` walks them).
pub const MAX_USERS: usize = 15;

/// The users of every BMC of the process: user ID 1 is the null
/// (anonymous) user, disabled; configured users are IDs 2, 3, ...
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Users {
    list: Vec<User>,
}

impl Default for Users {
    fn default() -> Self {
        Users {
            list: vec![User {
                name: b"admin".to_vec(),
                password: b"password".to_vec(),
                privilege: Privilege::Administrator,
            }],
        }
    }
}

impl Users {
    /// Checks the users: names of 1 to 16 bytes, unique; passwords of at
    /// most 20 bytes (IPMI v2.0); at most 14 users. Errors name the user.
    pub fn new(list: Vec<User>) -> Result<Users, String> {
        if list.len() > MAX_USERS - 1 {
            return Err(format!("at most {} users", MAX_USERS - 1));
        }
        for (i, u) in list.iter().enumerate() {
            let name = String::from_utf8_lossy(&u.name);
            if u.name.is_empty() || u.name.len() > 16 {
                return Err(format!("user {i}: a name of 1 to 16 bytes"));
            }
            if u.name.contains(&0) || u.name.contains(&b':') {
                return Err(format!("user {name:?}: NUL or ':' in the name"));
            }
            if u.password.len() > 20 {
                return Err(format!("user {name:?}: a password of at most 20 bytes"));
            }
            if list[..i].iter().any(|o| o.name == u.name) {
                return Err(format!("user {name:?} is listed twice"));
            }
        }
        Ok(Users { list })
    }

    /// Parses `NAME:PASSWORD[:PRIVILEGE]` (privilege defaults to
    /// administrator).
    pub fn parse_flag(s: &str) -> Result<User, String> {
        let (name, rest) = s
            .split_once(':')
            .ok_or_else(|| format!("{s:?}: expected NAME:PASSWORD[:PRIVILEGE]"))?;
        let (password, privilege) = match rest.rsplit_once(':') {
            Some((p, level)) if Privilege::parse(level).is_some() => (p, level),
            _ => (rest, "administrator"),
        };
        Ok(User {
            name: name.as_bytes().to_vec(),
            password: password.as_bytes().to_vec(),
            privilege: Privilege::parse(privilege).unwrap_or(Privilege::Administrator),
        })
    }

    pub fn find(&self, name: &[u8]) -> Option<&User> {
        self.list.iter().find(|u| u.name == name)
    }

    /// The user of a user ID (2 and up); ID 1 is the null user.
    pub fn by_id(&self, id: u8) -> Option<&User> {
        (id as usize).checked_sub(2).and_then(|i| self.list.get(i))
    }

    /// The user ID of a user.
    pub fn id_of(&self, name: &[u8]) -> Option<u8> {
        self.list
            .iter()
            .position(|u| u.name == name)
            .map(|i| i as u8 + 2)
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_parse_with_and_without_a_privilege() {
        let u = Users::parse_flag("ops:s3:cret:operator").unwrap();
        assert_eq!(
            (u.name.as_slice(), u.password.as_slice()),
            (&b"ops"[..], &b"s3:cret"[..])
        );
        assert_eq!(u.privilege, Privilege::Operator);
        let u = Users::parse_flag("root:calvin").unwrap();
        assert_eq!(u.privilege, Privilege::Administrator);
        assert!(Users::parse_flag("nopassword").is_err());
    }

    #[test]
    fn bad_user_lists_are_refused_naming_the_user() {
        let u = |n: &str, p: &str| User {
            name: n.into(),
            password: p.into(),
            privilege: Privilege::User,
        };
        assert!(Users::new(vec![u("a", "b"), u("a", "c")])
            .unwrap_err()
            .contains("twice"));
        assert!(Users::new(vec![u("a", &"x".repeat(21))])
            .unwrap_err()
            .contains("20 bytes"));
        assert!(Users::new(vec![u(&"n".repeat(17), "x")]).is_err());
        let users = Users::new(vec![u("a", "b"), u("c", "d")]).unwrap();
        assert_eq!(users.id_of(b"c"), Some(3));
        assert_eq!(users.by_id(2).map(|u| u.name.clone()), Some(b"a".to_vec()));
        assert!(users.by_id(1).is_none());
    }
}
