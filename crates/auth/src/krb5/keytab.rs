//! MIT keytab files (format 0x0502, as `kadmin ktadd` and `ktutil` write them): the service
//! keys the Kerberos acceptor decrypts tickets with.

use zeroize::Zeroizing;

/// The most entries read from one keytab; a real one holds a few per principal and kvno.
const MAX_ENTRIES: usize = 4096;

/// One key of a service principal.
pub struct KeytabEntry {
    pub realm: String,
    /// The name's components: `["cifs", "host.example"]` for `cifs/host.example`.
    pub components: Vec<String>,
    pub kvno: u32,
    pub enctype: i32,
    pub key: Zeroizing<Vec<u8>>,
}

/// The keys of a keytab file.
pub struct Keytab {
    pub entries: Vec<KeytabEntry>,
}

/// Why a keytab could not be read.
#[derive(Debug, thiserror::Error)]
pub enum KeytabError {
    #[error("cannot read {0}: {1}")]
    Io(String, std::io::Error),
    #[error("not an MIT keytab of version 0x0502 (starts with {0:02x?})")]
    Version([u8; 2]),
    #[error("malformed keytab: {0}")]
    Malformed(&'static str),
    #[error("keytab has more than {MAX_ENTRIES} entries")]
    TooManyEntries,
}

/// A big-endian reader over one entry, every read checked against the bytes present.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], KeytabError> {
        if n > self.0.len() {
            return Err(KeytabError::Malformed(what));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u8(&mut self, what: &'static str) -> Result<u8, KeytabError> {
        Ok(self.take(1, what)?.first().copied().unwrap_or_default())
    }
    fn u16(&mut self, what: &'static str) -> Result<u16, KeytabError> {
        let b = self.take(2, what)?;
        Ok(u16::from_be_bytes(
            b.try_into().map_err(|_| KeytabError::Malformed(what))?,
        ))
    }
    fn u32(&mut self, what: &'static str) -> Result<u32, KeytabError> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes(
            b.try_into().map_err(|_| KeytabError::Malformed(what))?,
        ))
    }
    fn string(&mut self, what: &'static str) -> Result<String, KeytabError> {
        let n = usize::from(self.u16(what)?);
        let bytes = self.take(n, what)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| KeytabError::Malformed(what))
    }
}

impl Keytab {
    /// Reads the keytab at `path`.
    pub fn load(path: &std::path::Path) -> Result<Self, KeytabError> {
        let bytes = Zeroizing::new(
            std::fs::read(path).map_err(|e| KeytabError::Io(path.display().to_string(), e))?,
        );
        Self::parse(&bytes)
    }

    /// Decodes a keytab file's bytes. Holes (negative sizes, left by deleted entries) are
    /// skipped.
    pub fn parse(bytes: &[u8]) -> Result<Self, KeytabError> {
        let mut r = Reader(bytes);
        let version = r
            .take(2, "version")
            .map_err(|_| KeytabError::Version([0; 2]))?;
        if version != [0x05, 0x02] {
            let mut v = [0; 2];
            v.copy_from_slice(version);
            return Err(KeytabError::Version(v));
        }
        let mut entries = Vec::new();
        while !r.0.is_empty() {
            let size = r.u32("entry size")? as i32;
            let body = r.take(size.unsigned_abs() as usize, "entry")?;
            if size <= 0 {
                continue;
            }
            if entries.len() == MAX_ENTRIES {
                return Err(KeytabError::TooManyEntries);
            }
            entries.push(Self::entry(Reader(body))?);
        }
        Ok(Self { entries })
    }

    fn entry(mut r: Reader<'_>) -> Result<KeytabEntry, KeytabError> {
        let count = r.u16("component count")?;
        let realm = r.string("realm")?;
        let components = (0..count)
            .map(|_| r.string("component"))
            .collect::<Result<Vec<_>, _>>()?;
        let _name_type = r.u32("name type")?;
        let _timestamp = r.u32("timestamp")?;
        let kvno8 = r.u8("kvno")?;
        let enctype = i32::from(r.u16("enctype")?);
        let len = usize::from(r.u16("key")?);
        let key = Zeroizing::new(r.take(len, "key")?.to_vec());
        // A 32-bit kvno may follow; when present and non-zero it replaces the 8-bit one.
        let kvno = match r.u32("kvno32") {
            Ok(k) if k != 0 => k,
            _ => u32::from(kvno8),
        };
        Ok(KeytabEntry {
            realm,
            components,
            kvno,
            enctype,
            key,
        })
    }

    /// The key of `realm`/`components` for `enctype`: the one of `kvno` when the ticket names
    /// one, else the highest kvno.
    pub fn find(
        &self,
        realm: &str,
        components: &[String],
        enctype: i32,
        kvno: Option<u32>,
    ) -> Option<&KeytabEntry> {
        self.entries
            .iter()
            .filter(|e| {
                e.realm == realm
                    && e.components == components
                    && e.enctype == enctype
                    && kvno.is_none_or(|k| k == e.kvno)
            })
            .max_by_key(|e| e.kvno)
    }

    /// Whether the keytab holds any key of `realm` for the service `service` (`cifs`).
    pub fn has_service(&self, realm: &str, service: &str) -> bool {
        self.entries
            .iter()
            .any(|e| e.realm == realm && e.components.first().is_some_and(|c| c == service))
    }
}
