//! The cloud `--ironic-cloud` names, read from `clouds.yaml` as
//! openstacksdk (and so sushy-tools) finds it: `$OS_CLIENT_CONFIG_FILE`,
//! else the first of `./clouds.yaml`, `~/.config/openstack/clouds.yaml`,
//! `/etc/openstack/clouds.yaml`; a `secure.yaml` beside it (same search)
//! is merged over it, as openstacksdk merges it.
//!
//! Ironic without Keystone is what this serves: `auth_type: none` or
//! `http_basic` (the two a standalone Ironic, Bifrost's or metal3's,
//! runs with), the endpoint from `baremetal_endpoint_override` or
//! `auth.endpoint`, TLS checked unless `verify: false`, against `cacert`
//! when given. A Keystone `auth_type` is refused with the reason.

use std::path::{Path, PathBuf};

use yaml_rust2::{Yaml, YamlLoader};

/// How requests to Ironic authenticate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    None,
    Basic { username: String, password: String },
}

/// One cloud of `clouds.yaml`, as far as Ironic is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cloud {
    pub name: String,
    /// The file it came from, for messages.
    pub file: PathBuf,
    /// Ironic's API root (`http://host:6385`), without `/v1` or a
    /// trailing slash.
    pub endpoint: String,
    pub auth: Auth,
    /// `verify: false`: TLS certificates are not checked.
    pub insecure: bool,
    /// `cacert`: the CA Ironic's certificate is checked against.
    pub cacert: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CloudError {
    #[error(
        "--ironic-cloud {0}: no clouds.yaml (looked at $OS_CLIENT_CONFIG_FILE, ./clouds.yaml, \
         ~/.config/openstack/clouds.yaml, /etc/openstack/clouds.yaml)"
    )]
    NoFile(String),
    #[error("{0}: {1}")]
    Read(String, String),
    #[error("{file}: clouds.{name}: no such cloud (the file has: {have})")]
    NoCloud {
        file: String,
        name: String,
        have: String,
    },
    #[error("{file}: clouds.{name}.{key}: {why}")]
    Key {
        file: String,
        name: String,
        key: &'static str,
        why: String,
    },
}

/// Where openstacksdk looks for `base` (`clouds.yaml`, `secure.yaml`).
fn candidates(base: &str) -> Vec<PathBuf> {
    let mut v = vec![PathBuf::from(base)];
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".config")));
    if let Some(c) = config {
        v.push(c.join("openstack").join(base));
    }
    v.push(Path::new("/etc/openstack").join(base));
    v
}

/// Finds and reads the cloud `name`.
pub fn load(name: &str) -> Result<Cloud, CloudError> {
    let file = match std::env::var_os("OS_CLIENT_CONFIG_FILE") {
        Some(f) => PathBuf::from(f),
        None => candidates("clouds.yaml")
            .into_iter()
            .find(|p| p.is_file())
            .ok_or_else(|| CloudError::NoFile(name.to_string()))?,
    };
    let secure = candidates("secure.yaml").into_iter().find(|p| p.is_file());
    let read = |p: &Path| {
        std::fs::read_to_string(p)
            .map_err(|e| CloudError::Read(p.display().to_string(), e.to_string()))
    };
    let secure = match secure {
        Some(p) => Some((p.clone(), read(&p)?)),
        None => None,
    };
    parse(
        name,
        &file,
        &read(&file)?,
        secure.as_ref().map(|(p, t)| (p.as_path(), t.as_str())),
    )
}

fn document(file: &Path, text: &str) -> Result<Yaml, CloudError> {
    let docs = YamlLoader::load_from_str(text)
        .map_err(|e| CloudError::Read(file.display().to_string(), e.to_string()))?;
    Ok(docs.into_iter().next().unwrap_or(Yaml::Null))
}

/// `over` merged into `base`, mappings key by key (openstacksdk's merge of
/// secure.yaml).
fn merge(base: &mut Yaml, over: Yaml) {
    match (base, over) {
        (Yaml::Hash(b), Yaml::Hash(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(slot) => merge(slot, v),
                    None => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (b, o) => *b = o,
    }
}

/// The cloud `name` of a `clouds.yaml` text (and a `secure.yaml`'s).
pub fn parse(
    name: &str,
    file: &Path,
    text: &str,
    secure: Option<(&Path, &str)>,
) -> Result<Cloud, CloudError> {
    let mut doc = document(file, text)?;
    if let Some((p, t)) = secure {
        merge(&mut doc, document(p, t)?);
    }
    let fname = file.display().to_string();
    let clouds = &doc["clouds"];
    let cloud = &clouds[name];
    if cloud.is_badvalue() || cloud.is_null() {
        let have: Vec<&str> = clouds
            .as_hash()
            .map(|h| h.keys().filter_map(Yaml::as_str).collect())
            .unwrap_or_default();
        return Err(CloudError::NoCloud {
            file: fname,
            name: name.to_string(),
            have: if have.is_empty() {
                "none".into()
            } else {
                have.join(", ")
            },
        });
    }
    let key = |key: &'static str, why: String| CloudError::Key {
        file: fname.clone(),
        name: name.to_string(),
        key,
        why,
    };
    let string = |v: &Yaml, k: &'static str| -> Result<Option<String>, CloudError> {
        match v {
            Yaml::BadValue | Yaml::Null => Ok(None),
            Yaml::String(s) => Ok(Some(s.clone())),
            // YAML reads an unquoted number or boolean as one.
            Yaml::Integer(i) => Ok(Some(i.to_string())),
            Yaml::Real(r) => Ok(Some(r.clone())),
            _ => Err(key(k, "must be a string".into())),
        }
    };
    let auth = &cloud["auth"];
    let auth_type = string(&cloud["auth_type"], "auth_type")?;
    let auth = match auth_type.as_deref() {
        Some("none" | "noauth") => Auth::None,
        Some("http_basic") => {
            let username = string(&auth["username"], "auth.username")?
                .ok_or_else(|| key("auth.username", "http_basic needs one".into()))?;
            let password = string(&auth["password"], "auth.password")?
                .ok_or_else(|| key("auth.password", "http_basic needs one".into()))?;
            Auth::Basic { username, password }
        }
        None => {
            return Err(key(
                "auth_type",
                "missing: Shoal talks to a standalone Ironic, `none` or `http_basic`".into(),
            ))
        }
        Some(other) => {
            return Err(key(
                "auth_type",
                format!(
                    "{other:?} is Keystone authentication, which Shoal does not do: it talks to a \
                     standalone Ironic (auth_type `none` or `http_basic`, as Bifrost and metal3 \
                     run it)"
                ),
            ))
        }
    };
    let endpoint = match string(
        &cloud["baremetal_endpoint_override"],
        "baremetal_endpoint_override",
    )? {
        Some(e) => e,
        None => string(&cloud["auth"]["endpoint"], "auth.endpoint")?.ok_or_else(|| {
            key(
                "baremetal_endpoint_override",
                "missing (nor auth.endpoint): where Ironic's API is".into(),
            )
        })?,
    };
    let trimmed = endpoint.trim_end_matches('/');
    let trimmed = trimmed.strip_suffix("/v1").unwrap_or(trimmed).to_string();
    let parsed: Result<ureq::http::Uri, _> = trimmed.parse();
    match parsed {
        Ok(u) if matches!(u.scheme_str(), Some("http" | "https")) && u.host().is_some() => {}
        _ => {
            return Err(key(
                "baremetal_endpoint_override",
                format!("{endpoint:?} is not an http(s) URL"),
            ))
        }
    }
    let insecure = match &cloud["verify"] {
        Yaml::BadValue | Yaml::Null => false,
        Yaml::Boolean(b) => !b,
        _ => return Err(key("verify", "must be true or false".into())),
    };
    let cacert = string(&cloud["cacert"], "cacert")?.map(PathBuf::from);
    if let Some(c) = &cacert {
        if !c.is_file() {
            return Err(key("cacert", format!("{} is not a file", c.display())));
        }
    }
    Ok(Cloud {
        name: name.to_string(),
        file: file.to_path_buf(),
        endpoint: trimmed,
        auth,
        insecure,
        cacert,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(name: &str, text: &str) -> Result<Cloud, CloudError> {
        parse(name, Path::new("clouds.yaml"), text, None)
    }

    #[test]
    fn a_standalone_ironic_without_auth() {
        let c = p(
            "metal3",
            "clouds:\n  metal3:\n    auth_type: none\n    baremetal_endpoint_override: http://172.22.0.2:6385/v1/\n",
        )
        .unwrap();
        assert_eq!(c.endpoint, "http://172.22.0.2:6385");
        assert_eq!(c.auth, Auth::None);
        assert!(!c.insecure);
    }

    #[test]
    fn http_basic_with_the_endpoint_under_auth_and_the_password_in_secure_yaml() {
        let c = parse(
            "bifrost",
            Path::new("clouds.yaml"),
            "clouds:\n  bifrost:\n    auth_type: http_basic\n    verify: false\n    auth:\n      username: ironic\n      endpoint: https://ironic.example:6385\n",
            Some((
                Path::new("secure.yaml"),
                "clouds:\n  bifrost:\n    auth:\n      password: s3cret\n",
            )),
        )
        .unwrap();
        assert_eq!(c.endpoint, "https://ironic.example:6385");
        assert_eq!(
            c.auth,
            Auth::Basic {
                username: "ironic".into(),
                password: "s3cret".into()
            }
        );
        assert!(c.insecure);
    }

    #[test]
    fn errors_name_the_file_the_cloud_and_the_key() {
        let e = p(
            "x",
            "clouds:\n  a: {auth_type: none}\n  b: {auth_type: none}\n",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "clouds.yaml: clouds.x: no such cloud (the file has: a, b)"
        );
        let e = p(
            "a",
            "clouds:\n  a:\n    auth_type: password\n    auth: {auth_url: http://k:5000}\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("clouds.yaml: clouds.a.auth_type: \"password\" is Keystone"),
            "{e}"
        );
        let e = p("a", "clouds:\n  a:\n    auth_type: none\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("clouds.a.baremetal_endpoint_override: missing"),
            "{e}"
        );
        let e = p(
            "a",
            "clouds:\n  a:\n    auth_type: none\n    baremetal_endpoint_override: ftp://x\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("is not an http(s) URL"), "{e}");
        let e = p(
            "a",
            "clouds:\n  a:\n    auth_type: http_basic\n    baremetal_endpoint_override: http://x\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("clouds.a.auth.username: http_basic needs one"),
            "{e}"
        );
        let e = p("a", "clouds:\n  a:\n    auth_type: none\n    verify: maybe\n    baremetal_endpoint_override: http://x\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("clouds.a.verify: must be true or false"), "{e}");
        let e = p("a", "clouds: [\n").unwrap_err().to_string();
        assert!(e.starts_with("clouds.yaml: "), "{e}");
    }
}
