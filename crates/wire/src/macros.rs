/// Declares a newtype over an integer with named constants. Unknown values stay representable
/// (a peer may send any value) and print as hex.
///
/// ```
/// smb3d_wire::open_enum! {
///     /// Example.
///     pub struct Color(u16) { RED = 1, GREEN = 2 }
/// }
/// assert_eq!(format!("{:?}", Color::GREEN), "GREEN");
/// assert_eq!(format!("{:?}", Color(7)), "Color(0x7)");
/// ```
#[macro_export]
macro_rules! open_enum {
    ($(#[$m:meta])* $vis:vis struct $name:ident($repr:ty) { $($(#[$vm:meta])* $var:ident = $val:expr),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
        $vis struct $name(pub $repr);
        #[allow(dead_code)]
        impl $name {
            $($(#[$vm])* pub const $var: $name = $name($val);)*
            /// The constant's name, if the value has one.
            pub fn name(self) -> Option<&'static str> {
                match self { $(Self::$var => Some(stringify!($var)),)* _ => None }
            }
        }
        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                match self.name() {
                    Some(n) => f.write_str(n),
                    None => write!(f, concat!(stringify!($name), "({:#x})"), self.0),
                }
            }
        }
    };
}

/// Declares a newtype over an integer holding flag bits. Unknown bits are kept.
///
/// ```
/// smb3d_wire::open_flags! {
///     pub struct Mode(u32) { READ = 1, WRITE = 2 }
/// }
/// let m = Mode::READ | Mode::WRITE;
/// assert!(m.contains(Mode::WRITE));
/// assert_eq!(format!("{:?}", m | Mode(8)), "READ | WRITE | 0x8");
/// ```
#[macro_export]
macro_rules! open_flags {
    ($(#[$m:meta])* $vis:vis struct $name:ident($repr:ty) { $($(#[$vm:meta])* $var:ident = $val:expr),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
        $vis struct $name(pub $repr);
        #[allow(dead_code)]
        impl $name {
            $($(#[$vm])* pub const $var: $name = $name($val);)*
            pub const fn empty() -> Self { Self(0) }
            pub const fn bits(self) -> $repr { self.0 }
            pub const fn contains(self, other: Self) -> bool { self.0 & other.0 == other.0 }
            pub const fn intersects(self, other: Self) -> bool { self.0 & other.0 != 0 }
            pub const fn is_empty(self) -> bool { self.0 == 0 }
            pub const fn union(self, other: Self) -> Self { Self(self.0 | other.0) }
            pub const fn without(self, other: Self) -> Self { Self(self.0 & !other.0) }
            pub const fn intersection(self, other: Self) -> Self { Self(self.0 & other.0) }
            pub fn insert(&mut self, other: Self) { self.0 |= other.0 }
            pub fn remove(&mut self, other: Self) { self.0 &= !other.0 }
        }
        impl core::ops::BitOr for $name {
            type Output = Self;
            fn bitor(self, o: Self) -> Self { Self(self.0 | o.0) }
        }
        impl core::ops::BitOrAssign for $name {
            fn bitor_assign(&mut self, o: Self) { self.0 |= o.0 }
        }
        impl core::ops::BitAnd for $name {
            type Output = Self;
            fn bitand(self, o: Self) -> Self { Self(self.0 & o.0) }
        }
        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                let mut rest = self.0;
                let mut first = true;
                $(
                    if Self::$var.0 != 0 && self.0 & Self::$var.0 == Self::$var.0 {
                        if !first { f.write_str(" | ")?; }
                        f.write_str(stringify!($var))?;
                        rest &= !Self::$var.0;
                        first = false;
                    }
                )*
                if rest != 0 || first {
                    if !first { f.write_str(" | ")?; }
                    write!(f, "{:#x}", rest)?;
                }
                Ok(())
            }
        }
    };
}
