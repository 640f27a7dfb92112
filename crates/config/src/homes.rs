//! The `[share.homes]` template (Samba's `[homes]`): each user's home share is this share with
//! the path made for that user. Only substitutions that name the owner are taken; one that a
//! client chooses (`%m`, `%I`, `%a`, ...) could steer the path, so config check refuses it.

use std::path::{Path, PathBuf};

/// The share name that holds the home template.
pub const HOMES: &str = "homes";

/// Default mode of a home directory made on first connect: the owner's alone, as
/// pam_mkhomedir's default umask 0077 leaves it.
pub const DEFAULT_HOME_MODE: u32 = 0o700;

/// Whether `name` is the home template's share name.
pub fn is_homes(name: &str) -> bool {
    name.eq_ignore_ascii_case(HOMES)
}

/// Whom a home is made for, as the account databases name them.
#[derive(Debug, Clone, Copy)]
pub struct HomeOwner<'a> {
    /// The session's user name (`%U`, `%S`: the home share is named so).
    pub user: &'a str,
    /// The Unix account's name (`%u`).
    pub unix_user: &'a str,
    /// The Unix account's primary group name (`%G`, `%g`).
    pub group: &'a str,
    /// The home directory passwd gives the account (`%H`).
    pub home: &'a Path,
}

/// The path of `owner`'s home from the template's `path`. Every value put in must be one plain
/// path component (no `/`, NUL, `.` or `..`), so a hostile or odd account name stays inside the
/// directory the template names; `%H` must be absolute.
pub fn home_path(template: &Path, owner: &HomeOwner<'_>) -> Result<PathBuf, String> {
    let text = template
        .to_str()
        .ok_or_else(|| format!("home path {template:?} is not UTF-8"))?;
    let mut out = String::with_capacity(text.len() + 32);
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let code = chars
            .next()
            .ok_or_else(|| format!("home path {text:?} ends with a lone %"))?;
        match code {
            '%' => out.push('%'),
            'U' | 'S' => out.push_str(component("user name", owner.user)?),
            'u' => out.push_str(component("Unix user name", owner.unix_user)?),
            'G' | 'g' => out.push_str(component("group name", owner.group)?),
            'H' => {
                let home = owner.home.to_str().filter(|h| h.starts_with('/'));
                let home = home.ok_or_else(|| {
                    format!("home directory {:?} is not an absolute path", owner.home)
                })?;
                out.push_str(home.trim_end_matches('/'));
            }
            other => return Err(unsupported(text, other)),
        }
    }
    if !out.starts_with('/') {
        return Err(format!("home path {out:?} is not absolute"));
    }
    Ok(PathBuf::from(out))
}

/// What is wrong with a home template's `path`, if anything: substitutions other than those
/// [`home_path`] takes, or a path that cannot become absolute.
pub(crate) fn check_home_template(template: &Path) -> Result<(), String> {
    let sample = HomeOwner {
        user: "user",
        unix_user: "user",
        group: "group",
        home: Path::new("/home/user"),
    };
    home_path(template, &sample).map(|_| ())
}

fn unsupported(text: &str, code: char) -> String {
    format!(
        "home path {text:?}: %{code} is not supported (only %U, %u, %S, %G, %g, %H and %%, which \
         name the home's owner; a client-chosen value such as %m or %I could steer the path)"
    )
}

/// `value` if it is one plain, non-empty path component.
fn component<'a>(what: &str, value: &'a str) -> Result<&'a str, String> {
    if value.is_empty() || value == "." || value == ".." || value.contains(['/', '\0']) {
        return Err(format!("{what} {value:?} cannot name a home directory"));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner<'a>(user: &'a str, home: &'a str) -> HomeOwner<'a> {
        HomeOwner {
            user,
            unix_user: user,
            group: "staff",
            home: Path::new(home),
        }
    }

    #[test]
    fn substitutes_the_owner() {
        let alice = owner("alice", "/home/alice/");
        let path = |t: &str| home_path(Path::new(t), &alice);
        assert_eq!(
            path("/srv/homes/%U").unwrap(),
            Path::new("/srv/homes/alice")
        );
        assert_eq!(path("/srv/%G/%u").unwrap(), Path::new("/srv/staff/alice"));
        assert_eq!(path("%H").unwrap(), Path::new("/home/alice"));
        assert_eq!(path("%H/smb").unwrap(), Path::new("/home/alice/smb"));
        assert_eq!(path("/srv/100%%/%S").unwrap(), Path::new("/srv/100%/alice"));
        assert_eq!(path("/srv/shared").unwrap(), Path::new("/srv/shared"));
    }

    #[test]
    fn refuses_client_chosen_and_unknown_substitutions() {
        for template in [
            "/srv/%m",
            "/srv/%I/%U",
            "/srv/%a",
            "/srv/%t",
            "/srv/%U%",
            "%U/x",
        ] {
            assert!(
                check_home_template(Path::new(template)).is_err(),
                "{template}"
            );
        }
        assert!(check_home_template(Path::new("/srv/homes/%U")).is_ok());
        assert!(check_home_template(Path::new("%H")).is_ok());
    }

    /// A hostile name never leaves the directory the template names.
    #[test]
    fn hostile_names_build_no_path() {
        for name in ["..", ".", "", "a/b", "../root", "a\0b", "/"] {
            assert!(
                home_path(Path::new("/srv/homes/%U"), &owner(name, "/home/x")).is_err(),
                "{name:?}"
            );
        }
        assert!(home_path(Path::new("%H"), &owner("x", "relative")).is_err());
        assert!(home_path(Path::new("%H"), &owner("x", "")).is_err());
    }

    /// config check takes the template's path only with the owner's substitutions, and
    /// `create_home` only on the template, with a line and column.
    #[test]
    fn config_check_reads_the_template() {
        let parse = |text: &str| crate::Config::parse(Path::new("t.toml"), text);
        let ok =
            parse("[share.homes]\npath = \"%H\"\ncreate_home = true\ncreate_home_mode = 0o750\n")
                .unwrap();
        let homes = ok.share("HOMES").unwrap();
        assert!(homes.create_home);
        assert_eq!(homes.create_home_mode, 0o750);
        assert!(ok.to_toml().contains("create_home_mode = 0o750\n"));
        let err = parse("[share.homes]\npath = \"/srv/%m\"\n").unwrap_err();
        assert_eq!((err.line, err.column), (2, 8), "{err}");
        assert!(err.message.contains("%m is not supported"), "{err}");
        let err = parse("[share.docs]\npath = \"/srv\"\ncreate_home = true\n").unwrap_err();
        assert!(err.message.contains("only for the share named"), "{err}");
    }
}
