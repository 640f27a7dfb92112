//! SPNEGO tokens (RFC 4178 4.2, MS-SPNG 2.2): NegTokenInit, NegTokenInit2 and NegTokenResp,
//! with the GSS-API framing of the initial token (RFC 2743 3.1).

use crate::der::{self, DerReader};
use smb3d_wire::{DecodeError, DecodeErrorKind, Result};

/// The most mechanisms accepted in one MechTypeList; real clients send at most five.
const MAX_MECH_TYPES: usize = 32;

/// DER contents of OID 1.3.6.1.5.5.2, SPNEGO (RFC 4178 3).
pub const OID_SPNEGO: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x02];
/// DER contents of OID 1.3.6.1.4.1.311.2.2.10, NTLMSSP (MS-NLMP 1.9).
pub const OID_NTLMSSP: &[u8] = &[0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x02, 0x02, 0x0a];
/// DER contents of OID 1.2.840.113554.1.2.2, Kerberos V5 (RFC 4121).
pub const OID_KRB5: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02];
/// DER contents of OID 1.2.840.48018.1.2.2, the Kerberos OID Windows 2000 sent (MS-KILE 1.9).
pub const OID_MS_KRB5: &[u8] = &[0x2a, 0x86, 0x48, 0x82, 0xf7, 0x12, 0x01, 0x02, 0x02];
/// DER contents of OID 1.3.6.1.4.1.311.2.2.30, NEGOEX (MS-NEGOEX 1.9).
pub const OID_NEGOEX: &[u8] = &[0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x02, 0x02, 0x1e];

/// The hint name Windows puts in NegTokenInit2 (MS-SPNG 2.2.1, 3.2.5.2).
pub const NEG_HINT_NAME: &[u8] = b"not_defined_in_RFC4178@please_ignore";

smb3d_wire::open_enum! {
    /// negState of a NegTokenResp (RFC 4178 4.2.2).
    pub struct NegState(u8) {
        ACCEPT_COMPLETED = 0,
        ACCEPT_INCOMPLETE = 1,
        REJECT = 2,
        REQUEST_MIC = 3,
    }
}

/// NegTokenInit (RFC 4178 4.2.1), the initiator's first token.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NegTokenInit<'a> {
    /// Each mechanism's OID contents, in the initiator's order of preference.
    pub mech_types: Vec<&'a [u8]>,
    /// The complete DER encoding of the MechTypeList, which the mechListMIC covers.
    pub mech_types_der: &'a [u8],
    /// The contents of the reqFlags BIT STRING (unused-bits octet first).
    pub req_flags: Option<&'a [u8]>,
    /// The optimistic token for `mech_types[0]`.
    pub mech_token: Option<&'a [u8]>,
    pub mech_list_mic: Option<&'a [u8]>,
}

/// NegHints of a NegTokenInit2 (MS-SPNG 2.2.1).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NegHints<'a> {
    pub hint_name: Option<&'a [u8]>,
    pub hint_address: Option<&'a [u8]>,
}

/// NegTokenInit2 (MS-SPNG 2.2.1), the acceptor's unsolicited first token.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NegTokenInit2<'a> {
    pub mech_types: Vec<&'a [u8]>,
    pub req_flags: Option<&'a [u8]>,
    pub mech_token: Option<&'a [u8]>,
    pub neg_hints: Option<NegHints<'a>>,
    pub mech_list_mic: Option<&'a [u8]>,
}

/// NegTokenResp (RFC 4178 4.2.2), every token after the first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NegTokenResp<'a> {
    pub neg_state: Option<NegState>,
    pub supported_mech: Option<&'a [u8]>,
    pub response_token: Option<&'a [u8]>,
    pub mech_list_mic: Option<&'a [u8]>,
}

/// A token an initiator sends (RFC 4178 4.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NegotiationToken<'a> {
    Init(NegTokenInit<'a>),
    Resp(NegTokenResp<'a>),
}

/// Unwraps the GSS-API InitialContextToken (RFC 2743 3.1) and checks that it is SPNEGO's;
/// returns the inner token.
fn unwrap_initial_context_token(token: &[u8]) -> Result<&[u8]> {
    let mut outer = DerReader::new(token);
    let app = outer.expect(der::APPLICATION_0, "InitialContextToken")?;
    if !outer.is_empty() {
        return Err(DecodeError::invalid("InitialContextToken"));
    }
    let mut r = DerReader::new(app.contents);
    let mech = r.expect(der::OID, "thisMech")?;
    if mech.contents != OID_SPNEGO {
        return Err(DecodeError::invalid("thisMech"));
    }
    Ok(r.remaining())
}

/// Decodes a MechTypeList (RFC 4178 4.1): a SEQUENCE OF OBJECT IDENTIFIER.
fn decode_mech_types<'a>(list: der::Tlv<'a>) -> Result<Vec<&'a [u8]>> {
    let mut r = DerReader::new(list.contents);
    let mut mechs = Vec::new();
    while !r.is_empty() {
        if mechs.len() == MAX_MECH_TYPES {
            return Err(DecodeError::new("mechTypes", DecodeErrorKind::TooLong));
        }
        mechs.push(r.expect(der::OID, "mechTypes")?.contents);
    }
    if mechs.is_empty() {
        return Err(DecodeError::invalid("mechTypes"));
    }
    Ok(mechs)
}

/// Opens a SEQUENCE that must be the only value in `bytes`.
fn sole_sequence<'a>(bytes: &'a [u8], field: &'static str) -> Result<DerReader<'a>> {
    let mut r = DerReader::new(bytes);
    let seq = r.expect(der::SEQUENCE, field)?;
    if !r.is_empty() {
        return Err(DecodeError::invalid(field));
    }
    Ok(DerReader::new(seq.contents))
}

impl<'a> NegTokenInit<'a> {
    /// Decodes the contents of the `[0]` choice of NegotiationToken.
    fn decode_choice(contents: &'a [u8]) -> Result<Self> {
        let mut r = sole_sequence(contents, "NegTokenInit")?;
        let list = r
            .explicit(0, der::SEQUENCE, "mechTypes")?
            .ok_or(DecodeError::truncated("mechTypes"))?;
        let mech_types = decode_mech_types(list)?;
        let req_flags = r.explicit(1, der::BIT_STRING, "reqFlags")?;
        let mech_token = r.explicit(2, der::OCTET_STRING, "mechToken")?;
        let mech_list_mic = r.explicit(3, der::OCTET_STRING, "mechListMIC")?;
        r.skip_unknown_fields(4, "NegTokenInit")?;
        Ok(Self {
            mech_types,
            mech_types_der: list.encoded,
            req_flags: req_flags.map(|t| t.contents),
            mech_token: mech_token.map(|t| t.contents),
            mech_list_mic: mech_list_mic.map(|t| t.contents),
        })
    }
}

impl<'a> NegTokenInit2<'a> {
    /// Decodes a NegTokenInit2 in its GSS-API framing, as a server sends it.
    pub fn decode(token: &'a [u8]) -> Result<Self> {
        let inner = unwrap_initial_context_token(token)?;
        let mut r = DerReader::new(inner);
        let choice = r.expect(der::context(0), "NegotiationToken")?;
        if !r.is_empty() {
            return Err(DecodeError::invalid("NegotiationToken"));
        }
        let mut r = sole_sequence(choice.contents, "NegTokenInit2")?;
        let list = r
            .explicit(0, der::SEQUENCE, "mechTypes")?
            .ok_or(DecodeError::truncated("mechTypes"))?;
        let mech_types = decode_mech_types(list)?;
        let req_flags = r.explicit(1, der::BIT_STRING, "reqFlags")?;
        let mech_token = r.explicit(2, der::OCTET_STRING, "mechToken")?;
        let neg_hints = match r.explicit(3, der::SEQUENCE, "negHints")? {
            None => None,
            Some(seq) => {
                let mut h = DerReader::new(seq.contents);
                let hint_name = h.explicit(0, der::GENERAL_STRING, "hintName")?;
                let hint_address = h.explicit(1, der::OCTET_STRING, "hintAddress")?;
                h.skip_unknown_fields(2, "negHints")?;
                Some(NegHints {
                    hint_name: hint_name.map(|t| t.contents),
                    hint_address: hint_address.map(|t| t.contents),
                })
            }
        };
        let mech_list_mic = r.explicit(4, der::OCTET_STRING, "mechListMIC")?;
        r.skip_unknown_fields(5, "NegTokenInit2")?;
        Ok(Self {
            mech_types,
            req_flags: req_flags.map(|t| t.contents),
            mech_token: mech_token.map(|t| t.contents),
            neg_hints,
            mech_list_mic: mech_list_mic.map(|t| t.contents),
        })
    }

    /// Encodes in the GSS-API framing.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        der::write_nested(der::APPLICATION_0, &mut out, |app| {
            der::write_tlv(der::OID, OID_SPNEGO, app);
            der::write_nested(der::context(0), app, |choice| {
                der::write_nested(der::SEQUENCE, choice, |seq| {
                    der::write_nested(der::context(0), seq, |f| {
                        write_mech_types(&self.mech_types, f);
                    });
                    write_optional(seq, 1, der::BIT_STRING, self.req_flags);
                    write_optional(seq, 2, der::OCTET_STRING, self.mech_token);
                    if let Some(hints) = &self.neg_hints {
                        der::write_nested(der::context(3), seq, |f| {
                            der::write_nested(der::SEQUENCE, f, |h| {
                                write_optional(h, 0, der::GENERAL_STRING, hints.hint_name);
                                write_optional(h, 1, der::OCTET_STRING, hints.hint_address);
                            });
                        });
                    }
                    write_optional(seq, 4, der::OCTET_STRING, self.mech_list_mic);
                });
            });
        });
        out
    }
}

impl NegTokenInit<'_> {
    /// Encodes in the GSS-API framing, as an initiator sends it.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        der::write_nested(der::APPLICATION_0, &mut out, |app| {
            der::write_tlv(der::OID, OID_SPNEGO, app);
            der::write_nested(der::context(0), app, |choice| {
                der::write_nested(der::SEQUENCE, choice, |seq| {
                    der::write_nested(der::context(0), seq, |f| {
                        write_mech_types(&self.mech_types, f);
                    });
                    write_optional(seq, 1, der::BIT_STRING, self.req_flags);
                    write_optional(seq, 2, der::OCTET_STRING, self.mech_token);
                    write_optional(seq, 3, der::OCTET_STRING, self.mech_list_mic);
                });
            });
        });
        out
    }
}

impl<'a> NegTokenResp<'a> {
    /// Decodes the contents of the `[1]` choice of NegotiationToken.
    fn decode_choice(contents: &'a [u8]) -> Result<Self> {
        let mut r = sole_sequence(contents, "NegTokenResp")?;
        let neg_state = match r.explicit(0, der::ENUMERATED, "negState")? {
            None => None,
            Some(t) => match t.contents {
                [v] => Some(NegState(*v)),
                _ => return Err(DecodeError::invalid("negState")),
            },
        };
        let supported_mech = r.explicit(1, der::OID, "supportedMech")?;
        let response_token = r.explicit(2, der::OCTET_STRING, "responseToken")?;
        let mech_list_mic = r.explicit(3, der::OCTET_STRING, "mechListMIC")?;
        r.skip_unknown_fields(4, "NegTokenResp")?;
        Ok(Self {
            neg_state,
            supported_mech: supported_mech.map(|t| t.contents),
            response_token: response_token.map(|t| t.contents),
            mech_list_mic: mech_list_mic.map(|t| t.contents),
        })
    }

    /// Decodes a NegTokenResp, which travels without GSS-API framing.
    pub fn decode(token: &'a [u8]) -> Result<Self> {
        match NegotiationToken::decode(token)? {
            NegotiationToken::Resp(resp) => Ok(resp),
            NegotiationToken::Init(_) => Err(DecodeError::invalid("NegTokenResp")),
        }
    }

    /// Encodes as the `[1]` choice of NegotiationToken.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        der::write_nested(der::context(1), &mut out, |choice| {
            der::write_nested(der::SEQUENCE, choice, |seq| {
                if let Some(state) = self.neg_state {
                    der::write_nested(der::context(0), seq, |f| {
                        der::write_tlv(der::ENUMERATED, &[state.0], f);
                    });
                }
                write_optional(seq, 1, der::OID, self.supported_mech);
                write_optional(seq, 2, der::OCTET_STRING, self.response_token);
                write_optional(seq, 3, der::OCTET_STRING, self.mech_list_mic);
            });
        });
        out
    }
}

impl<'a> NegotiationToken<'a> {
    /// Decodes what an initiator sends: a NegTokenInit in its GSS-API framing (or, as some
    /// initiators send it, bare), or a bare NegTokenResp.
    pub fn decode(token: &'a [u8]) -> Result<Self> {
        let inner = if token.first() == Some(&der::APPLICATION_0) {
            unwrap_initial_context_token(token)?
        } else {
            token
        };
        let mut r = DerReader::new(inner);
        let choice = r.read("NegotiationToken")?;
        if !r.is_empty() {
            return Err(DecodeError::invalid("NegotiationToken"));
        }
        match choice.tag {
            t if t == der::context(0) => {
                NegTokenInit::decode_choice(choice.contents).map(Self::Init)
            }
            t if t == der::context(1) => {
                NegTokenResp::decode_choice(choice.contents).map(Self::Resp)
            }
            _ => Err(DecodeError::invalid("NegotiationToken")),
        }
    }
}

/// Writes a MechTypeList.
fn write_mech_types(mechs: &[&[u8]], out: &mut Vec<u8>) {
    der::write_nested(der::SEQUENCE, out, |list| {
        for mech in mechs {
            der::write_tlv(der::OID, mech, list);
        }
    });
}

/// The DER encoding of a MechTypeList, as the mechListMIC covers it (RFC 4178 5).
pub fn encode_mech_types(mechs: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    write_mech_types(mechs, &mut out);
    out
}

/// Writes `[n] value` when the value is present.
fn write_optional(out: &mut Vec<u8>, n: u8, tag: u8, value: Option<&[u8]>) {
    if let Some(v) = value {
        der::write_nested(der::context(n), out, |f| der::write_tlv(tag, v, f));
    }
}

/// The NegTokenInit2 a server puts in its NEGOTIATE response (MS-SMB2 3.3.5.4, MS-SPNG
/// 3.2.5.2): NTLMSSP as the only mechanism and Windows' hint name.
pub fn server_initial_token() -> Vec<u8> {
    server_initial_token_for(false)
}

/// [`server_initial_token`], listing the Kerberos OIDs first when the server takes Kerberos
/// (as Windows lists them: MS-KILE 3.1.5.11's legacy OID, then RFC 4121's).
pub fn server_initial_token_for(kerberos: bool) -> Vec<u8> {
    let mech_types = if kerberos {
        vec![OID_MS_KRB5, OID_KRB5, OID_NTLMSSP]
    } else {
        vec![OID_NTLMSSP]
    };
    NegTokenInit2 {
        mech_types,
        neg_hints: Some(NegHints {
            hint_name: Some(NEG_HINT_NAME),
            hint_address: None,
        }),
        ..NegTokenInit2::default()
    }
    .encode()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// Samba 4.17's NEGOTIATE response security buffer (loopback capture, see
    /// tests/samba_capture.rs).
    const SAMBA_INIT2: &str = "604806062b0601050502a03e303ca00e300c060a2b06010401823702020aa32a3028a0261b246e6f745f646566696e65645f696e5f5246433431373840706c656173655f69676e6f7265";
    /// smbclient's first SESSION_SETUP security buffer (same capture).
    const SMBCLIENT_INIT: &str = "604806062b0601050502a03e303ca00e300c060a2b06010401823702020aa22a04284e544c4d53535000010000001582086200000000280000000000000028000000060100000000000f";

    #[test]
    fn samba_neg_token_init2_decodes_and_re_encodes() {
        let bytes = hex(SAMBA_INIT2);
        let t = NegTokenInit2::decode(&bytes).unwrap();
        assert_eq!(t.mech_types, vec![OID_NTLMSSP]);
        assert_eq!(t.neg_hints.as_ref().unwrap().hint_name, Some(NEG_HINT_NAME));
        assert_eq!(t.mech_token, None);
        assert_eq!(t.encode(), bytes);
        assert_eq!(server_initial_token(), bytes);
    }

    #[test]
    fn smbclient_neg_token_init_decodes_and_re_encodes() {
        let bytes = hex(SMBCLIENT_INIT);
        let NegotiationToken::Init(t) = NegotiationToken::decode(&bytes).unwrap() else {
            panic!("expected NegTokenInit");
        };
        assert_eq!(t.mech_types, vec![OID_NTLMSSP]);
        assert_eq!(t.mech_types_der, &hex("300c060a2b06010401823702020a")[..]);
        assert!(t.mech_token.unwrap().starts_with(b"NTLMSSP\0"));
        assert_eq!(t.encode(), bytes);
        // The same token without the GSS-API framing, as some initiators send it.
        assert_eq!(
            NegotiationToken::decode(&bytes[10..]).unwrap(),
            NegotiationToken::Init(t)
        );
    }

    #[test]
    fn neg_token_resp_round_trips_and_skips_extensions() {
        let resp = NegTokenResp {
            neg_state: Some(NegState::ACCEPT_COMPLETED),
            supported_mech: Some(OID_NTLMSSP),
            response_token: Some(b"tok"),
            mech_list_mic: Some(&[7; 16]),
        };
        let bytes = resp.encode();
        assert_eq!(NegTokenResp::decode(&bytes).unwrap(), resp);
        // A later field [5] is skipped (RFC 4178 4.2.2 leaves the SEQUENCE extensible).
        let mut extended = Vec::new();
        der::write_nested(der::context(1), &mut extended, |c| {
            der::write_nested(der::SEQUENCE, c, |s| {
                der::write_nested(der::context(0), s, |f| {
                    der::write_tlv(der::ENUMERATED, &[1], f)
                });
                der::write_nested(der::context(5), s, |f| {
                    der::write_tlv(der::OCTET_STRING, b"later", f)
                });
            });
        });
        let decoded = NegTokenResp::decode(&extended).unwrap();
        assert_eq!(decoded.neg_state, Some(NegState::ACCEPT_INCOMPLETE));
        // Fields out of order or unknown universal tags are refused.
        let mut swapped = Vec::new();
        der::write_nested(der::context(1), &mut swapped, |c| {
            der::write_nested(der::SEQUENCE, c, |s| {
                der::write_nested(der::context(2), s, |f| {
                    der::write_tlv(der::OCTET_STRING, b"t", f)
                });
                der::write_nested(der::context(0), s, |f| {
                    der::write_tlv(der::ENUMERATED, &[1], f)
                });
            });
        });
        assert!(NegTokenResp::decode(&swapped).is_err());
    }

    #[test]
    fn every_truncation_is_refused() {
        for token in [hex(SAMBA_INIT2), hex(SMBCLIENT_INIT)] {
            for len in 0..token.len() {
                assert!(NegotiationToken::decode(&token[..len]).is_err(), "{len}");
                assert!(NegTokenInit2::decode(&token[..len]).is_err(), "{len}");
            }
        }
    }

    #[test]
    fn huge_lengths_are_refused_without_allocating() {
        let cases = [
            hex("6084ffffffff06062b0601050502"),
            hex("60480606"),
            hex("a184ffffff00"),
            hex("a1053003a084ffffffff"),
            hex("604806062b0601050502a03e303ca08effffffffffffffffffffffffffffff"),
        ];
        for case in cases {
            assert!(NegotiationToken::decode(&case).is_err(), "{case:02x?}");
        }
    }

    #[test]
    fn deep_nesting_is_refused_without_recursing() {
        // 2 000 nested [0] wrappers: the decoder reads a fixed schema, so it stops at the
        // first wrong tag instead of descending.
        let depth = 2_000;
        let mut token = vec![0x04, 0x00];
        for _ in 0..depth {
            let mut outer = Vec::with_capacity(token.len() + 6);
            der::write_tlv(der::context(0), &token, &mut outer);
            token = outer;
        }
        assert!(NegotiationToken::decode(&token).is_err());
        let mut wrapped = Vec::new();
        der::write_nested(der::APPLICATION_0, &mut wrapped, |app| {
            der::write_tlv(der::OID, OID_SPNEGO, app);
            app.extend_from_slice(&token);
        });
        assert!(NegotiationToken::decode(&wrapped).is_err());
    }

    #[test]
    fn wrong_framing_is_refused() {
        // Another mechanism's OID in the GSS-API header.
        let mut krb = hex(SMBCLIENT_INIT);
        krb[4..10].copy_from_slice(&[0x2b, 0x06, 0x01, 0x05, 0x05, 0x03]);
        assert!(NegotiationToken::decode(&krb).is_err());
        // Trailing bytes after the token.
        let mut trailing = hex(SMBCLIENT_INIT);
        trailing.push(0);
        assert!(NegotiationToken::decode(&trailing).is_err());
        // An empty mechanism list, and a negState longer than one byte.
        assert!(NegotiationToken::decode(&hex("a0063004a0023000")).is_err());
        assert!(NegotiationToken::decode(&hex("a1083006a0040a020001")).is_err());
    }
}
