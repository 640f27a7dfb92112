use core::fmt;

use crate::{VfsError, VfsResult};

/// The longest single name, in bytes (Linux `NAME_MAX`).
pub const MAX_NAME_LEN: usize = 255;
/// The longest path relative to the share root, in bytes (Linux `PATH_MAX` less the NUL).
pub const MAX_PATH_LEN: usize = 4095;

/// Checks that `name` can be one component of a [`VfsPath`]: not empty, not `.` or `..`, no
/// `/` or NUL, at most [`MAX_NAME_LEN`] bytes.
pub fn validate_name(name: &str) -> VfsResult<()> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
        return Err(VfsError::InvalidName);
    }
    if name.len() > MAX_NAME_LEN {
        return Err(VfsError::NameTooLong);
    }
    Ok(())
}

/// A validated path relative to the share root: components joined by `/`, none empty, `.`,
/// `..`, or containing `/` or NUL. The root is the empty path.
///
/// Because no component can be `..`, a `VfsPath` names something inside the share as long as no
/// symlink is followed; back ends confine symlinks themselves.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VfsPath(String);

impl VfsPath {
    /// The share root.
    pub const fn root() -> Self {
        Self(String::new())
    }

    /// Builds a path from its components, validating each; no components gives the root.
    pub fn from_components<I, S>(components: I) -> VfsResult<Self>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut path = Self::root();
        for component in components {
            path.push(component.as_ref())?;
        }
        Ok(path)
    }

    /// Parses a `/`-separated path; the empty string is the root. No leading, trailing or
    /// doubled `/` is accepted.
    pub fn parse(path: &str) -> VfsResult<Self> {
        if path.is_empty() {
            return Ok(Self::root());
        }
        Self::from_components(path.split('/'))
    }

    /// This path with one more component.
    pub fn join(&self, name: &str) -> VfsResult<Self> {
        let mut path = self.clone();
        path.push(name)?;
        Ok(path)
    }

    pub(crate) fn push(&mut self, name: &str) -> VfsResult<()> {
        validate_name(name)?;
        let separator = usize::from(!self.0.is_empty());
        if self.0.len() + separator + name.len() > MAX_PATH_LEN {
            return Err(VfsError::NameTooLong);
        }
        if separator == 1 {
            self.0.push('/');
        }
        self.0.push_str(name);
        Ok(())
    }

    /// The parent directory and the last component; `None` for the root.
    pub fn parent_and_name(&self) -> Option<(VfsPath, &str)> {
        if self.0.is_empty() {
            return None;
        }
        Some(match self.0.rsplit_once('/') {
            Some((parent, name)) => (Self(parent.to_owned()), name),
            None => (Self::root(), self.0.as_str()),
        })
    }

    /// The last component; `None` for the root.
    pub fn name(&self) -> Option<&str> {
        if self.0.is_empty() {
            return None;
        }
        Some(self.0.rsplit('/').next().unwrap_or(&self.0))
    }

    /// The components from the root down; none for the root.
    pub fn components(&self) -> impl DoubleEndedIterator<Item = &str> + '_ {
        self.0.split('/').filter(|component| !component.is_empty())
    }

    /// The components joined by `/`; empty for the root.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is the share root.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for VfsPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VfsPath({:?})", self.0)
    }
}

impl fmt::Display for VfsPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "/{}", self.0)
    }
}

impl AsRef<str> for VfsPath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_empty() {
        let root = VfsPath::root();
        assert!(root.is_root());
        assert_eq!(root.as_str(), "");
        assert_eq!(root.components().count(), 0);
        assert!(root.parent_and_name().is_none());
        assert!(root.name().is_none());
        assert_eq!(VfsPath::parse("").unwrap(), root);
        assert_eq!(VfsPath::from_components::<_, &str>([]).unwrap(), root);
        assert_eq!(root.to_string(), "/");
    }

    #[test]
    fn components_round_trip() {
        let path = VfsPath::from_components(["a", "b c", "ü.txt"]).unwrap();
        assert_eq!(path.as_str(), "a/b c/ü.txt");
        assert_eq!(path.components().collect::<Vec<_>>(), ["a", "b c", "ü.txt"]);
        assert_eq!(VfsPath::parse("a/b c/ü.txt").unwrap(), path);
        assert_eq!(path.name(), Some("ü.txt"));
        let (parent, name) = path.parent_and_name().unwrap();
        assert_eq!(parent.as_str(), "a/b c");
        assert_eq!(name, "ü.txt");
        let single = VfsPath::parse("a").unwrap();
        let (top, name) = single.parent_and_name().unwrap();
        assert!(top.is_root());
        assert_eq!(name, "a");
        assert_eq!(
            VfsPath::root()
                .join("x")
                .unwrap()
                .join("y")
                .unwrap()
                .as_str(),
            "x/y"
        );
    }

    #[test]
    fn rejects_bad_components() {
        for bad in ["", ".", "..", "a/b", "nul\0"] {
            assert_eq!(
                VfsPath::root().join(bad),
                Err(VfsError::InvalidName),
                "{bad:?}"
            );
            assert_eq!(validate_name(bad), Err(VfsError::InvalidName), "{bad:?}");
        }
        for bad in ["/a", "a/", "a//b", "a/./b", "a/../b", "..", "/"] {
            assert_eq!(VfsPath::parse(bad), Err(VfsError::InvalidName), "{bad:?}");
        }
        assert!(validate_name("...").is_ok());
        assert!(validate_name(".hidden").is_ok());
    }

    #[test]
    fn enforces_length_limits() {
        let longest = "n".repeat(MAX_NAME_LEN);
        assert!(VfsPath::root().join(&longest).is_ok());
        assert_eq!(
            VfsPath::root().join(&format!("{longest}n")),
            Err(VfsError::NameTooLong)
        );
        // 16 names of 255 bytes and 15 separators are exactly MAX_PATH_LEN.
        let deep = vec![longest.as_str(); 17];
        assert_eq!(VfsPath::from_components(deep), Err(VfsError::NameTooLong));
        let fits = vec![longest.as_str(); 16];
        assert!(VfsPath::from_components(fits).is_ok());
    }
}
