//! IPMI users and privilege levels.
//!
//! RAKP keys its HMACs with the clear password, which a bcrypt htpasswd
//! cannot give back; IPMI users are therefore configured apart from the
//! Redfish accounts: `[[ipmi.users]]` in the config, or `--ipmi-user
//! NAME:PASSWORD[:PRIVILEGE]`. There is no built-in account: without
//! configured users nobody logs in, and IPMI over LAN refuses to start.
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

/// The users of a BMC: user ID 1 is the null (anonymous) user, disabled;
/// IDs 2 to [`MAX_USERS`] are slots, the configured users first. A
/// client with administrator rights renames, enables, disables, sets the
/// password and privilege limit of a slot (Set User Name, Password,
/// Access), as on a real BMC; the changes live as long as the process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Users {
    slots: Vec<Slot>,
}

/// One user slot (ID 2 and up).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Slot {
    /// Empty: the slot has no name.
    pub name: Vec<u8>,
    pub password: Vec<u8>,
    /// `None`: no access on the channel.
    pub limit: Option<Privilege>,
    pub enabled: bool,
    /// IPMI messaging allowed on the channel.
    pub messaging: bool,
}

impl Slot {
    fn of(u: &User) -> Slot {
        Slot {
            name: u.name.clone(),
            password: u.password.clone(),
            limit: Some(u.privilege),
            enabled: true,
            messaging: true,
        }
    }
}

/// Why a Set User request is refused (its completion code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetError {
    /// A field out of range (0xCC).
    Invalid,
    /// Test Password: the password does not match (0x80).
    PasswordMismatch,
    /// Test Password: the stored password is of the other size (0x81).
    PasswordSize,
}

/// No account at all: every slot unnamed and disabled.
impl Default for Users {
    fn default() -> Self {
        Users {
            slots: vec![Slot::default(); MAX_USERS - 1],
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
        let mut slots: Vec<Slot> = list.iter().map(Slot::of).collect();
        slots.resize(MAX_USERS - 1, Slot::default());
        Ok(Users { slots })
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

    /// The user who may log in by this name: enabled, with IPMI
    /// messaging and a privilege limit on the channel.
    pub fn find(&self, name: &[u8]) -> Option<User> {
        self.slots
            .iter()
            .find(|s| !s.name.is_empty() && s.name == name && s.enabled && s.messaging)
            .and_then(|s| {
                Some(User {
                    name: s.name.clone(),
                    password: s.password.clone(),
                    privilege: s.limit?,
                })
            })
    }

    /// The slot of a user ID (2 and up); ID 1 is the null user.
    pub fn by_id(&self, id: u8) -> Option<&Slot> {
        (id as usize).checked_sub(2).and_then(|i| self.slots.get(i))
    }

    fn slot_mut(&mut self, id: u8) -> Result<&mut Slot, SetError> {
        (id as usize)
            .checked_sub(2)
            .and_then(|i| self.slots.get_mut(i))
            .ok_or(SetError::Invalid)
    }

    /// The user ID of a named user.
    pub fn id_of(&self, name: &[u8]) -> Option<u8> {
        self.slots
            .iter()
            .position(|s| !s.name.is_empty() && s.name == name)
            .map(|i| i as u8 + 2)
    }

    /// How many user IDs are enabled.
    pub fn enabled(&self) -> usize {
        self.slots.iter().filter(|s| s.enabled).count()
    }

    /// Set User Name: `name` (NUL-padded); a name another slot has is
    /// refused.
    pub fn set_name(&mut self, id: u8, name: &[u8]) -> Result<(), SetError> {
        let name: Vec<u8> = name.iter().copied().take_while(|b| *b != 0).collect();
        if name.contains(&b':') || (!name.is_empty() && self.id_of(&name).is_some_and(|o| o != id))
        {
            return Err(SetError::Invalid);
        }
        self.slot_mut(id)?.name = name;
        Ok(())
    }

    /// Set User Password's operations: 0 disable, 1 enable, 2 set the
    /// password, 3 test it (`password` NUL-padded, 16 or 20 bytes).
    pub fn set_password(&mut self, id: u8, op: u8, password: &[u8]) -> Result<(), SetError> {
        let slot = self.slot_mut(id)?;
        let clear: Vec<u8> = password.iter().copied().take_while(|b| *b != 0).collect();
        match op {
            0 => slot.enabled = false,
            1 => slot.enabled = true,
            2 => slot.password = clear,
            3 => {
                if slot.password.len() > 16 && password.len() == 16 {
                    return Err(SetError::PasswordSize);
                }
                if slot.password != clear {
                    return Err(SetError::PasswordMismatch);
                }
            }
            _ => return Err(SetError::Invalid),
        }
        Ok(())
    }

    /// Set User Access: the privilege limit (`0x0f`: no access) and, when
    /// asked, IPMI messaging.
    pub fn set_access(
        &mut self,
        id: u8,
        limit: u8,
        messaging: Option<bool>,
    ) -> Result<(), SetError> {
        let limit = match limit & 0x0f {
            0x0f => None,
            l => Some(match Privilege::from_u8(l) {
                Some(p) if p <= Privilege::Administrator => p,
                _ => return Err(SetError::Invalid),
            }),
        };
        let slot = self.slot_mut(id)?;
        slot.limit = limit;
        if let Some(m) = messaging {
            slot.messaging = m;
        }
        Ok(())
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
        assert_eq!(users.enabled(), 2);
    }

    #[test]
    fn no_account_is_built_in() {
        let users = Users::default();
        assert_eq!(users.enabled(), 0);
        assert!(users.find(b"admin").is_none());
        assert_eq!(users, Users::new(Vec::new()).unwrap());
    }

    #[test]
    fn slots_are_named_enabled_and_limited_as_set_user_commands_say() {
        let mut users = Users::new(vec![Users::parse_flag("admin:secret").unwrap()]).unwrap();
        assert!(users.find(b"bob").is_none());
        users.set_name(3, b"bob\0\0\0").unwrap();
        users
            .set_password(3, 2, b"pw\0\0\0\0\0\0\0\0\0\0\0\0\0\0")
            .unwrap();
        // Named and with a password, but not enabled nor given access yet.
        assert!(users.find(b"bob").is_none());
        users.set_password(3, 1, &[]).unwrap();
        assert!(users.find(b"bob").is_none(), "no privilege limit yet");
        users.set_access(3, 3, Some(true)).unwrap();
        let bob = users.find(b"bob").unwrap();
        assert_eq!(
            (bob.password.as_slice(), bob.privilege),
            (&b"pw"[..], Privilege::Operator)
        );
        assert_eq!(users.set_password(3, 3, b"pw"), Ok(()));
        assert_eq!(
            users.set_password(3, 3, b"px"),
            Err(SetError::PasswordMismatch)
        );
        // Another slot's name, a bad limit, the null user, an unknown op.
        assert_eq!(users.set_name(4, b"bob"), Err(SetError::Invalid));
        assert_eq!(users.set_access(3, 5, None), Err(SetError::Invalid));
        assert_eq!(users.set_name(1, b"x"), Err(SetError::Invalid));
        assert_eq!(users.set_name(16, b"x"), Err(SetError::Invalid));
        assert_eq!(users.set_password(3, 7, &[]), Err(SetError::Invalid));
        users.set_access(3, 0x0f, None).unwrap();
        assert!(users.find(b"bob").is_none(), "no access");
        users.set_access(3, 2, None).unwrap();
        users.set_password(3, 0, &[]).unwrap();
        assert!(users.find(b"bob").is_none(), "disabled");
        assert_eq!(users.enabled(), 1);
    }
}
