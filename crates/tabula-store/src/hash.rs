//! Object addresses.

use std::fmt;
use std::str::FromStr;

/// The address of a stored object: `blake3(kind tag || 0x00 || postcard bytes)`.
#[derive(
    Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct ObjectHash(pub [u8; 32]);

impl ObjectHash {
    /// The address of `bytes` as a record of kind `kind`.
    pub fn of(kind: &str, bytes: &[u8]) -> ObjectHash {
        let mut h = blake3::Hasher::new();
        h.update(kind.as_bytes());
        h.update(&[0]);
        h.update(bytes);
        ObjectHash(*h.finalize().as_bytes())
    }

    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The first 12 hex digits, for tables meant for people.
    pub fn short(&self) -> String {
        self.to_hex()[..12].to_string()
    }
}

impl fmt::Display for ObjectHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for ObjectHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectHash({})", self.short())
    }
}

impl FromStr for ObjectHash {
    type Err = String;

    /// Parses 64 hex digits.
    fn from_str(s: &str) -> Result<ObjectHash, String> {
        let s = s.trim();
        if s.len() != 64 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("`{s}` is not an object hash (64 hex digits)"));
        }
        let mut out = [0u8; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).map_err(|e| e.to_string())?;
        }
        Ok(ObjectHash(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip_and_kind_separation() {
        let a = ObjectHash::of("solution/v1", b"abc");
        assert_eq!(a.to_hex().parse::<ObjectHash>().unwrap(), a);
        assert_ne!(a, ObjectHash::of("solution/v2", b"abc"));
        // The separator keeps (kind, bytes) pairs unambiguous.
        assert_ne!(ObjectHash::of("ab", b"c"), ObjectHash::of("a", b"bc"));
        assert!("xyz".parse::<ObjectHash>().is_err());
    }
}
