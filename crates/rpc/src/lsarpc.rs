//! lsarpc (MS-LSAD, MS-LSAT): policy handles, the domain information clients ask for, and
//! translation between names and SIDs, which Windows' Security tab and `rpcclient lookupnames`
//! use.

use smb3d_dtyp::{AccessMask, NtStatus, Sid};

use crate::ndr::{CONTEXT_HANDLE_LEN, NdrReader, NdrWriter};
use crate::service::{CallContext, CallFault};
use crate::{Directory, SidType};

/// MS-LSAD 3.1.4.9.4.
const LSAR_CLOSE: u16 = 0;
/// MS-LSAD 3.1.4.4.2.
const LSAR_OPEN_POLICY: u16 = 6;
/// MS-LSAD 3.1.4.4.4.
const LSAR_QUERY_INFORMATION_POLICY: u16 = 7;
/// MS-LSAT 3.1.4.8.
const LSAR_LOOKUP_NAMES: u16 = 14;
/// MS-LSAT 3.1.4.11.
const LSAR_LOOKUP_SIDS: u16 = 15;
/// MS-LSAD 3.1.4.4.1.
const LSAR_OPEN_POLICY2: u16 = 44;
/// MS-LSAD 3.1.4.4.3.
const LSAR_QUERY_INFORMATION_POLICY2: u16 = 46;
/// MS-LSAT 3.1.4.10.
const LSAR_LOOKUP_SIDS2: u16 = 57;
/// MS-LSAT 3.1.4.7.
const LSAR_LOOKUP_NAMES2: u16 = 58;
/// MS-LSAT 3.1.4.6.
const LSAR_LOOKUP_NAMES3: u16 = 68;
/// MS-LSAT 3.1.4.9.
const LSAR_LOOKUP_SIDS3: u16 = 76;
/// MS-LSAT 3.1.4.5.
const LSAR_LOOKUP_NAMES4: u16 = 77;

/// Policy object rights (MS-LSAD 2.2.1.1.2).
const POLICY_VIEW_LOCAL_INFORMATION: u32 = 0x0000_0001;
const POLICY_VIEW_AUDIT_INFORMATION: u32 = 0x0000_0002;
const POLICY_GET_PRIVATE_INFORMATION: u32 = 0x0000_0004;
const POLICY_LOOKUP_NAMES: u32 = 0x0000_0800;
/// The specific rights that change policy (trust admin to server admin).
const POLICY_WRITE_RIGHTS: u32 = 0x0000_07f8;
const POLICY_NOTIFICATION: u32 = 0x0000_1000;
/// Generic mapping of the policy object (MS-LSAD 2.2.1.1.2).
const POLICY_READ: u32 =
    AccessMask::READ_CONTROL.0 | POLICY_VIEW_AUDIT_INFORMATION | POLICY_GET_PRIVATE_INFORMATION;
const POLICY_WRITE: u32 = AccessMask::READ_CONTROL.0 | POLICY_WRITE_RIGHTS;
const POLICY_EXECUTE: u32 =
    AccessMask::READ_CONTROL.0 | POLICY_VIEW_LOCAL_INFORMATION | POLICY_LOOKUP_NAMES;
const POLICY_ALL_ACCESS: u32 = 0x000f_0000 | 0x0000_0fff | POLICY_NOTIFICATION;
/// What a non-administrator may open the policy with: the rights Windows' default policy
/// descriptor grants to Everyone (view local information and look up names).
const USER_RIGHTS: u32 = POLICY_EXECUTE;

/// STATUS_SOME_NOT_MAPPED (MS-ERREF 2.3.1), a success code.
const STATUS_SOME_NOT_MAPPED: NtStatus = NtStatus(0x0000_0107);

/// POLICY_INFORMATION_CLASS values served (MS-LSAD 2.2.4.1).
const POLICY_PRIMARY_DOMAIN_INFORMATION: u16 = 3;
const POLICY_ACCOUNT_DOMAIN_INFORMATION: u16 = 5;
const POLICY_LSA_SERVER_ROLE_INFORMATION: u16 = 6;
const POLICY_DNS_DOMAIN_INFORMATION: u16 = 12;
/// PolicyServerRolePrimary (MS-LSAD 2.2.4.3): what a stand-alone server reports.
const POLICY_SERVER_ROLE_PRIMARY: u16 = 3;

/// LSAP_LOOKUP_LEVEL values accepted (MS-LSAT 2.2.16): LsapLookupWksta to
/// LsapLookupXForestResolve; a stand-alone server answers them all from its own accounts.
const LOOKUP_LEVELS: core::ops::RangeInclusive<u16> = 1..=6;
/// [range] limits of the lookup arrays (MS-LSAT 2.2.18 and 3.1.4.5 to 3.1.4.8).
const MAX_LOOKUP_SIDS: u32 = 20_480;
const MAX_LOOKUP_NAMES: u32 = 1_000;
/// The MaxEntries granularity of a referenced domain list, as Windows and Samba report it.
const DOMAIN_LIST_GROWTH: u32 = 32;
/// Open policy handles per pipe.
const MAX_HANDLES: usize = 64;

/// The policy handles one pipe has open.
pub struct LsaState {
    handles: Vec<([u8; 16], u32)>,
    next_handle: u32,
    seed: u64,
}

impl LsaState {
    /// Handles are the counter and `seed`, so they are distinct per pipe and unguessable
    /// across pipes.
    pub fn new(seed: u64) -> Self {
        Self {
            handles: Vec::new(),
            next_handle: 1,
            seed,
        }
    }

    fn open(&mut self, granted: u32) -> Option<[u8; CONTEXT_HANDLE_LEN]> {
        if self.handles.len() >= MAX_HANDLES {
            return None;
        }
        let mut id = [0u8; 16];
        let (counter, rest) = id.split_at_mut(4);
        counter.copy_from_slice(&self.next_handle.to_le_bytes());
        let (seed, tail) = rest.split_at_mut(8);
        seed.copy_from_slice(&self.seed.to_le_bytes());
        tail.copy_from_slice(&self.next_handle.rotate_left(16).to_le_bytes());
        self.next_handle = self.next_handle.wrapping_add(1);
        self.handles.push((id, granted));
        let mut handle = [0u8; CONTEXT_HANDLE_LEN];
        if let Some(dst) = handle.get_mut(4..) {
            dst.copy_from_slice(&id);
        }
        Some(handle)
    }

    /// The rights of an open handle. A handle this pipe did not issue is a context mismatch,
    /// which the RPC runtime reports before the call runs.
    fn granted(&self, handle: &[u8; CONTEXT_HANDLE_LEN]) -> Result<u32, CallFault> {
        let (attributes, id) = handle.split_at(4);
        if attributes != [0; 4] {
            return Err(CallFault::ContextMismatch);
        }
        self.handles
            .iter()
            .find(|(h, _)| h.as_slice() == id)
            .map(|(_, granted)| *granted)
            .ok_or(CallFault::ContextMismatch)
    }

    fn close(&mut self, handle: &[u8; CONTEXT_HANDLE_LEN]) -> Result<(), CallFault> {
        self.granted(handle)?;
        let id = handle.get(4..).unwrap_or_default();
        self.handles.retain(|(h, _)| h.as_slice() != id);
        Ok(())
    }
}

/// Runs one lsarpc call.
pub fn call(
    state: &mut LsaState,
    cx: &CallContext<'_>,
    opnum: u16,
    stub: &[u8],
    out: &mut NdrWriter<'_>,
) -> Result<(), CallFault> {
    match opnum {
        LSAR_CLOSE => close(state, stub, out),
        LSAR_OPEN_POLICY => open_policy(state, cx, stub, out, false),
        LSAR_OPEN_POLICY2 => open_policy(state, cx, stub, out, true),
        LSAR_QUERY_INFORMATION_POLICY | LSAR_QUERY_INFORMATION_POLICY2 => {
            query_information_policy(state, cx, stub, out)
        }
        LSAR_LOOKUP_NAMES => lookup::<Names>(state, cx, stub, out, Version::V1),
        LSAR_LOOKUP_NAMES2 => lookup::<Names>(state, cx, stub, out, Version::V2),
        LSAR_LOOKUP_NAMES3 => lookup::<Names>(state, cx, stub, out, Version::V3),
        LSAR_LOOKUP_SIDS => lookup::<Sids>(state, cx, stub, out, Version::V1),
        LSAR_LOOKUP_SIDS2 => lookup::<Sids>(state, cx, stub, out, Version::V2),
        // MS-LSAT 2.1: these two are only for RPC over TCP with a Netlogon secure channel;
        // Windows refuses them on named pipes.
        LSAR_LOOKUP_SIDS3 | LSAR_LOOKUP_NAMES4 => Err(CallFault::AccessDenied),
        _ => Err(CallFault::OpRange),
    }
}

/// MS-LSAD 3.1.4.9.4 LsarClose: the handle is freed and returned zeroed.
fn close(state: &mut LsaState, stub: &[u8], out: &mut NdrWriter<'_>) -> Result<(), CallFault> {
    let handle = NdrReader::new(stub).context_handle("ObjectHandle")?;
    state.close(&handle)?;
    out.bytes(&[0; CONTEXT_HANDLE_LEN]).u32(NtStatus::SUCCESS.0);
    Ok(())
}

/// Maps generic rights to the policy object's (MS-LSAD 2.2.1.1.2) and drops MAXIMUM_ALLOWED.
fn map_generic(desired: u32) -> u32 {
    let generic = [
        (AccessMask::GENERIC_READ.0, POLICY_READ),
        (AccessMask::GENERIC_WRITE.0, POLICY_WRITE),
        (AccessMask::GENERIC_EXECUTE.0, POLICY_EXECUTE),
        (AccessMask::GENERIC_ALL.0, POLICY_ALL_ACCESS),
    ];
    let mut mapped = desired & !(0xf000_0000 | AccessMask::MAXIMUM_ALLOWED.0);
    for (bit, rights) in generic {
        if desired & bit != 0 {
            mapped |= rights;
        }
    }
    mapped
}

/// MS-LSAD 3.1.4.4.1 LsarOpenPolicy2 and 3.1.4.4.2 LsarOpenPolicy: a handle to the policy
/// object with the rights asked for, if the caller may have them. Anonymous callers get none
/// (Windows' default refuses anonymous name translation).
fn open_policy(
    state: &mut LsaState,
    cx: &CallContext<'_>,
    stub: &[u8],
    out: &mut NdrWriter<'_>,
    v2: bool,
) -> Result<(), CallFault> {
    let mut r = NdrReader::new(stub);
    if r.pointer("SystemName")? {
        if v2 {
            r.string("SystemName")?;
        } else {
            r.u16("SystemName")?;
        }
    }
    skip_object_attributes(&mut r)?;
    let desired = r.u32("DesiredAccess")?;

    let allowed = if cx.caller.is_anonymous() {
        0
    } else {
        USER_RIGHTS
    };
    let wanted = map_generic(desired);
    let granted = if desired & AccessMask::MAXIMUM_ALLOWED.0 != 0 {
        allowed | wanted
    } else {
        wanted
    };
    let status = if cx.caller.is_anonymous() || granted & !allowed != 0 {
        NtStatus::ACCESS_DENIED
    } else {
        match state.open(granted) {
            Some(handle) => {
                out.bytes(&handle).u32(NtStatus::SUCCESS.0);
                return Ok(());
            }
            None => NtStatus::INSUFFICIENT_RESOURCES,
        }
    };
    out.bytes(&[0; CONTEXT_HANDLE_LEN]).u32(status.0);
    Ok(())
}

/// Reads LSAPR_OBJECT_ATTRIBUTES (MS-LSAD 2.2.9), which the server ignores, to get past it.
/// A security descriptor in it is not parsed and makes the stub unacceptable.
fn skip_object_attributes(r: &mut NdrReader<'_>) -> Result<(), CallFault> {
    r.u32("ObjectAttributes.Length")?;
    let root = r.pointer("RootDirectory")?;
    let name = r.pointer("ObjectName")?;
    r.u32("Attributes")?;
    let descriptor = r.pointer("SecurityDescriptor")?;
    let qos = r.pointer("SecurityQualityOfService")?;
    if descriptor {
        return Err(CallFault::BadStub);
    }
    if root {
        r.u8("RootDirectory")?;
    }
    if name {
        // STRING: Length, MaximumLength, Buffer -> [size_is(MaximumLength),
        // length_is(Length)] char.
        r.u16("ObjectName.Length")?;
        r.u16("ObjectName.MaximumLength")?;
        if r.pointer("ObjectName.Buffer")? {
            r.u32("ObjectName.Buffer")?;
            r.u32("ObjectName.Buffer")?;
            let actual = r.u32("ObjectName.Buffer")?;
            r.bytes(
                usize::try_from(actual).map_err(|_| CallFault::BadStub)?,
                "ObjectName.Buffer",
            )?;
        }
    }
    if qos {
        r.u32("SecurityQualityOfService.Length")?;
        r.u16("ImpersonationLevel")?;
        r.u8("ContextTrackingMode")?;
        r.u8("EffectiveOnly")?;
    }
    Ok(())
}

/// MS-LSAD 3.1.4.4.4 LsarQueryInformationPolicy (and 3.1.4.4.3, the same for
/// LsarQueryInformationPolicy2): the domain information of a stand-alone server.
fn query_information_policy(
    state: &LsaState,
    cx: &CallContext<'_>,
    stub: &[u8],
    out: &mut NdrWriter<'_>,
) -> Result<(), CallFault> {
    let mut r = NdrReader::new(stub);
    let handle = r.context_handle("PolicyHandle")?;
    let class = r.u16("InformationClass")?;
    let granted = state.granted(&handle)?;

    let served = matches!(
        class,
        POLICY_PRIMARY_DOMAIN_INFORMATION
            | POLICY_ACCOUNT_DOMAIN_INFORMATION
            | POLICY_LSA_SERVER_ROLE_INFORMATION
            | POLICY_DNS_DOMAIN_INFORMATION
    );
    let status = if !served {
        NtStatus::INVALID_PARAMETER
    } else if granted & POLICY_VIEW_LOCAL_INFORMATION == 0 {
        NtStatus::ACCESS_DENIED
    } else {
        NtStatus::SUCCESS
    };
    if status != NtStatus::SUCCESS {
        out.pointer(false).u32(status.0);
        return Ok(());
    }
    let info = cx.directory.server_info();
    out.pointer(true).u16(class).align(4);
    match class {
        POLICY_PRIMARY_DOMAIN_INFORMATION => {
            // A stand-alone server's primary domain is its workgroup, which has no SID.
            out.counted_string_header(Some(&info.domain), true)
                .pointer(false)
                .counted_string_body(Some(&info.domain), true);
        }
        POLICY_ACCOUNT_DOMAIN_INFORMATION => {
            let sid = account_domain_sid(cx.directory, &info.netbios_name);
            out.counted_string_header(Some(&info.netbios_name), true)
                .pointer(sid.is_some())
                .counted_string_body(Some(&info.netbios_name), true);
            if let Some(sid) = &sid {
                out.sid(sid);
            }
        }
        POLICY_LSA_SERVER_ROLE_INFORMATION => {
            out.u16(POLICY_SERVER_ROLE_PRIMARY);
        }
        _ => {
            // PolicyDnsDomainInformation outside a domain: the workgroup name and nothing
            // else (no DNS names, no GUID, no SID).
            out.counted_string_header(Some(&info.domain), true)
                .counted_string_header(None, false)
                .counted_string_header(None, false)
                .bytes(&[0; 16])
                .pointer(false)
                .counted_string_body(Some(&info.domain), true);
        }
    }
    out.u32(NtStatus::SUCCESS.0);
    Ok(())
}

/// The account domain SID: the SID the directory gives the NetBIOS name.
fn account_domain_sid(directory: &dyn Directory, netbios_name: &str) -> Option<Sid> {
    match directory.lookup_name(netbios_name)? {
        (sid, SidType::Domain, _) => Some(sid),
        _ => None,
    }
}

/// Which generation of a lookup call: they differ in the translated entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    /// LsarLookupNames/LsarLookupSids: no flags.
    V1,
    /// LsarLookupNames2/LsarLookupSids2: with flags.
    V2,
    /// LsarLookupNames3: the whole SID instead of a RID.
    V3,
}

/// A translated name or SID.
struct Translation {
    sid: Sid,
    sid_type: SidType,
    /// The account name; `None` for a domain itself.
    name: Option<String>,
    domain_index: u32,
}

/// The referenced domain list being built (LSAPR_REFERENCED_DOMAIN_LIST, MS-LSAT 2.2.12).
#[derive(Default)]
struct Domains {
    entries: Vec<(String, Sid)>,
}

impl Domains {
    /// The index of a domain, added if new.
    fn index(&mut self, name: String, sid: Sid) -> u32 {
        let at = match self.entries.iter().position(|(_, s)| *s == sid) {
            Some(at) => at,
            None => {
                self.entries.push((name, sid));
                self.entries.len() - 1
            }
        };
        u32::try_from(at).unwrap_or(u32::MAX)
    }

    /// Writes `[out] PLSAPR_REFERENCED_DOMAIN_LIST* ReferencedDomains`.
    fn write(&self, out: &mut NdrWriter<'_>) {
        let count = u32::try_from(self.entries.len()).unwrap_or(u32::MAX);
        let max = count.div_ceil(DOMAIN_LIST_GROWTH) * DOMAIN_LIST_GROWTH;
        out.pointer(true).u32(count).pointer(count > 0).u32(max);
        if count == 0 {
            return;
        }
        out.u32(count);
        for (name, _) in &self.entries {
            out.counted_string_header(Some(name), true).pointer(true);
        }
        for (name, sid) in &self.entries {
            out.counted_string_body(Some(name), true).sid(sid);
        }
    }
}

/// The SID of the domain an account SID belongs to: the SID without its last sub-authority.
fn parent_sid(sid: &Sid) -> Sid {
    match sid.sub_authorities().split_last() {
        Some((_, parent)) => Sid::new(sid.authority(), parent).unwrap_or(*sid),
        None => *sid,
    }
}

/// The domain SID and name a translated entry refers to.
fn domain_of(sid: &Sid, sid_type: SidType) -> Sid {
    if sid_type == SidType::Domain {
        *sid
    } else {
        parent_sid(sid)
    }
}

/// Whether a directory answer counts as a translation.
fn is_mapped(sid_type: SidType) -> bool {
    !matches!(sid_type, SidType::Unknown | SidType::Invalid)
}

/// Case-insensitive name comparison.
fn same_name(a: &str, b: &str) -> bool {
    a.chars()
        .flat_map(char::to_lowercase)
        .eq(b.chars().flat_map(char::to_lowercase))
}

/// The status of a lookup from how many of how many were mapped (MS-LSAT 3.1.4.5).
fn lookup_status(mapped: usize, total: usize) -> NtStatus {
    if mapped == 0 {
        NtStatus::NONE_MAPPED
    } else if mapped < total {
        STATUS_SOME_NOT_MAPPED
    } else {
        NtStatus::SUCCESS
    }
}

/// What differs between the lookups of names and of SIDs: what the client asks to translate,
/// how one item translates, and the entries of the translated array.
trait Lookup {
    type Item;
    /// Reads the items to translate, which follow the policy handle, and the status to answer
    /// with instead of translating when the request alone decides it (once the handle and the
    /// level allow the lookup).
    fn read_items(r: &mut NdrReader<'_>) -> Result<(Vec<Self::Item>, Option<NtStatus>), CallFault>;
    /// Lets the directory gather what it needs for all `items` at once.
    fn prepare(directory: &dyn Directory, items: &[Self::Item]);
    fn translate(
        directory: &dyn Directory,
        domains: &mut Domains,
        item: &Self::Item,
    ) -> Option<Translation>;
    /// Writes the translated array's elements, after its conformance.
    fn write_translated(
        out: &mut NdrWriter<'_>,
        version: Version,
        items: &[Self::Item],
        translations: &[Option<Translation>],
    );
}

/// MS-LSAT 3.1.4.8 LsarLookupNames, 3.1.4.7 LsarLookupNames2 and 3.1.4.6 LsarLookupNames3.
struct Names;

impl Lookup for Names {
    type Item = String;

    fn read_items(r: &mut NdrReader<'_>) -> Result<(Vec<String>, Option<NtStatus>), CallFault> {
        let count = r.u32("Count")?;
        if count > MAX_LOOKUP_NAMES {
            return Err(CallFault::BadStub);
        }
        // [in, size_is(Count)] PRPC_UNICODE_STRING Names: conformance, headers, then buffers.
        let conformance = r.array_count(8, "Names")?;
        if u32::try_from(conformance).ok() != Some(count) {
            return Err(CallFault::BadStub);
        }
        let mut headers = Vec::with_capacity(conformance);
        for _ in 0..conformance {
            headers.push(r.counted_string_header("Names")?);
        }
        let mut names = Vec::with_capacity(conformance);
        for header in headers {
            names.push(if header.present {
                r.counted_string_body(header, "Names")?
            } else {
                String::new()
            });
        }
        Ok((names, None))
    }

    fn prepare(directory: &dyn Directory, names: &[String]) {
        directory.prepare_names(names);
    }

    /// Translates one name (MS-LSAT 3.1.4.5 name forms): `account`, `DOMAIN\account`,
    /// `account@DOMAIN`, or a domain name. A domain prefix must name the domain the account
    /// is in.
    fn translate(
        directory: &dyn Directory,
        domains: &mut Domains,
        full: &String,
    ) -> Option<Translation> {
        let (domain, account) = match full.split_once('\\') {
            Some((d, a)) => (Some(d), a),
            None => match full.rsplit_once('@') {
                Some((a, d)) => (Some(d), a),
                None => (None, full.as_str()),
            },
        };
        if account.is_empty() {
            return None;
        }
        let (sid, sid_type, domain_name) = directory.lookup_name(account)?;
        if !is_mapped(sid_type) {
            return None;
        }
        if let Some(d) = domain
            && !same_name(d, &domain_name)
        {
            return None;
        }
        let domain_index = domains.index(domain_name, domain_of(&sid, sid_type));
        Some(Translation {
            sid,
            sid_type,
            name: None,
            domain_index,
        })
    }

    /// TranslatedSids: LSAPR_TRANSLATED_SIDS, _EX or _EX2 (MS-LSAT 2.2.15, 2.2.22, 2.2.26).
    fn write_translated(
        out: &mut NdrWriter<'_>,
        version: Version,
        _names: &[String],
        translations: &[Option<Translation>],
    ) {
        for t in translations {
            match t {
                Some(t) => {
                    out.u16(t.sid_type as u16);
                    match version {
                        // A domain's RelativeId is -1 (it has none).
                        Version::V1 | Version::V2 => out.u32(match t.sid_type {
                            SidType::Domain => u32::MAX,
                            _ => t.sid.rid().unwrap_or(0),
                        }),
                        Version::V3 => out.pointer(true),
                    };
                    out.u32(t.domain_index);
                }
                None => {
                    out.u16(SidType::Unknown as u16);
                    match version {
                        Version::V1 | Version::V2 => out.u32(0),
                        Version::V3 => out.pointer(false),
                    };
                    out.u32(u32::MAX);
                }
            }
            if version != Version::V1 {
                out.u32(0);
            }
        }
        if version == Version::V3 {
            for t in translations.iter().flatten() {
                out.sid(&t.sid);
            }
        }
    }
}

/// MS-LSAT 3.1.4.11 LsarLookupSids and 3.1.4.10 LsarLookupSids2. A SID that does not
/// translate comes back as SidTypeUnknown with its string form as the name.
struct Sids;

impl Lookup for Sids {
    type Item = Sid;

    fn read_items(r: &mut NdrReader<'_>) -> Result<(Vec<Sid>, Option<NtStatus>), CallFault> {
        // LSAPR_SID_ENUM_BUFFER: [range(0,20480)] Entries, [size_is(Entries)] SidInfo.
        let entries = r.u32("SidEnumBuffer.Entries")?;
        if entries > MAX_LOOKUP_SIDS {
            return Err(CallFault::BadStub);
        }
        let mut sids = Vec::new();
        let mut null_sid = false;
        if r.pointer("SidEnumBuffer.SidInfo")? {
            let conformance = r.array_count(4, "SidInfo")?;
            if u32::try_from(conformance).ok() != Some(entries) {
                return Err(CallFault::BadStub);
            }
            let mut present = Vec::with_capacity(conformance);
            for _ in 0..conformance {
                present.push(r.pointer("SidInfo.Sid")?);
            }
            sids.reserve(conformance);
            for p in present {
                if p {
                    sids.push(r.sid("SidInfo.Sid")?);
                } else {
                    null_sid = true;
                }
            }
        } else if entries != 0 {
            null_sid = true;
        }
        let settled = if null_sid {
            Some(NtStatus::INVALID_PARAMETER)
        } else if sids.is_empty() {
            // Nothing to translate succeeds with nothing, not even a domain list (as Samba
            // answers).
            Some(NtStatus::SUCCESS)
        } else {
            None
        };
        Ok((sids, settled))
    }

    fn prepare(directory: &dyn Directory, sids: &[Sid]) {
        directory.prepare_sids(sids);
    }

    fn translate(
        directory: &dyn Directory,
        domains: &mut Domains,
        sid: &Sid,
    ) -> Option<Translation> {
        let (name, sid_type, domain_name) = directory.lookup_sid(sid)?;
        if !is_mapped(sid_type) {
            return None;
        }
        let domain_index = domains.index(domain_name, domain_of(sid, sid_type));
        Some(Translation {
            sid: *sid,
            sid_type,
            // A domain's own entry carries no name; its name is in the domain list.
            name: (sid_type != SidType::Domain).then_some(name),
            domain_index,
        })
    }

    /// TranslatedNames: LSAPR_TRANSLATED_NAMES or _EX (MS-LSAT 2.2.20, 2.2.23).
    fn write_translated(
        out: &mut NdrWriter<'_>,
        version: Version,
        sids: &[Sid],
        translations: &[Option<Translation>],
    ) {
        let unmapped_names: Vec<Option<String>> = sids
            .iter()
            .zip(translations)
            .map(|(sid, t)| t.is_none().then(|| sid.to_string()))
            .collect();
        let name_of = |i: usize| -> Option<&str> {
            match translations.get(i) {
                Some(Some(t)) => t.name.as_deref(),
                _ => unmapped_names.get(i).and_then(|n| n.as_deref()),
            }
        };
        for (i, t) in translations.iter().enumerate() {
            let (sid_type, domain_index) = match t {
                Some(t) => (t.sid_type, t.domain_index),
                None => (SidType::Unknown, u32::MAX),
            };
            out.u16(sid_type as u16)
                .counted_string_header(name_of(i), false)
                .u32(domain_index);
            if version != Version::V1 {
                out.u32(0);
            }
        }
        for i in 0..translations.len() {
            out.counted_string_body(name_of(i), false);
        }
    }
}

/// A lookup of either kind: the request, the checks, the referenced domains, the translated
/// array and the counts.
fn lookup<L: Lookup>(
    state: &LsaState,
    cx: &CallContext<'_>,
    stub: &[u8],
    out: &mut NdrWriter<'_>,
    version: Version,
) -> Result<(), CallFault> {
    let mut r = NdrReader::new(stub);
    let handle = r.context_handle("PolicyHandle")?;
    let (items, settled) = L::read_items(&mut r)?;
    // The [in, out] translated array: the server only ever fills it, so it comes empty.
    r.u32("Translated.Entries")?;
    if r.pointer("Translated.Array")? {
        return Err(CallFault::BadStub);
    }
    let level = r.u16("LookupLevel")?;
    r.u32("MappedCount")?;
    if version != Version::V1 {
        r.u32("LookupOptions")?;
        r.u32("ClientRevision")?;
    }

    let granted = state.granted(&handle)?;
    let settled = if granted & POLICY_LOOKUP_NAMES == 0 {
        Some(NtStatus::ACCESS_DENIED)
    } else if !LOOKUP_LEVELS.contains(&level) {
        Some(NtStatus::INVALID_PARAMETER)
    } else {
        settled
    };
    if let Some(status) = settled {
        // No domain list, no translations.
        out.pointer(false)
            .u32(0)
            .pointer(false)
            .u32(0)
            .u32(status.0);
        return Ok(());
    }
    L::prepare(cx.directory, &items);
    let mut domains = Domains::default();
    let translations: Vec<Option<Translation>> = items
        .iter()
        .map(|item| L::translate(cx.directory, &mut domains, item))
        .collect();
    let mapped = translations.iter().flatten().count();
    domains.write(out);

    let n = u32::try_from(translations.len()).unwrap_or(u32::MAX);
    out.u32(n).pointer(n > 0);
    if n > 0 {
        out.u32(n);
        L::write_translated(out, version, &items, &translations);
    }
    out.u32(u32::try_from(mapped).unwrap_or(u32::MAX))
        .u32(lookup_status(mapped, translations.len()).0);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_rights_map_to_policy_rights() {
        assert_eq!(map_generic(AccessMask::GENERIC_EXECUTE.0), POLICY_EXECUTE);
        assert_eq!(map_generic(AccessMask::MAXIMUM_ALLOWED.0), 0);
        assert_eq!(map_generic(POLICY_LOOKUP_NAMES), POLICY_LOOKUP_NAMES);
        assert_eq!(map_generic(AccessMask::GENERIC_ALL.0), 0x000f_1fff);
        assert_eq!(POLICY_EXECUTE, 0x0002_0801);
    }

    #[test]
    fn parent_of_account_and_well_known_sids() {
        let user: Sid = "S-1-5-21-1-2-3-1000".parse().unwrap();
        assert_eq!(parent_sid(&user).to_string(), "S-1-5-21-1-2-3");
        assert_eq!(parent_sid(&Sid::EVERYONE).to_string(), "S-1-1");
        let bare = Sid::new(5, &[]).unwrap();
        assert_eq!(parent_sid(&bare), bare);
    }

    #[test]
    fn handles_are_distinct_and_bounded() {
        let mut state = LsaState::new(7);
        let a = state.open(1).unwrap();
        let b = state.open(2).unwrap();
        assert_ne!(a, b);
        assert_eq!(&a[..4], &[0; 4]);
        assert_eq!(state.granted(&b), Ok(2));
        state.close(&a).unwrap();
        assert_eq!(state.granted(&a), Err(CallFault::ContextMismatch));
        assert_eq!(state.close(&a), Err(CallFault::ContextMismatch));
        let mut c = b;
        c[0] = 1;
        assert_eq!(state.granted(&c), Err(CallFault::ContextMismatch));
        for _ in 1..MAX_HANDLES {
            state.open(0).unwrap();
        }
        assert_eq!(state.open(0), None);
    }

    #[test]
    fn lookup_status_codes() {
        assert_eq!(lookup_status(0, 3), NtStatus::NONE_MAPPED);
        assert_eq!(lookup_status(2, 3), STATUS_SOME_NOT_MAPPED);
        assert_eq!(lookup_status(3, 3), NtStatus::SUCCESS);
        assert_eq!(lookup_status(0, 0), NtStatus::NONE_MAPPED);
    }
}
