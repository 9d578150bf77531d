//! The protobuf wire format: varints, tags and length-delimited fields, read and written.
//!
//! Only what Kubernetes' messages use: varints (wire type 0) and length-delimited fields (2) are
//! returned; fixed-width fields (1, 5) are skipped; groups (3, 4) are refused.

/// Why a buffer is not a protobuf message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("truncated varint")]
    TruncatedVarint,
    #[error("varint longer than 10 bytes")]
    VarintTooLong,
    #[error("field {0} runs past the end of its message")]
    Truncated(u64),
    #[error("field {field} has wire type {wire_type}, which Kubernetes messages do not use")]
    WireType { field: u64, wire_type: u64 },
    #[error("field number 0 is not valid")]
    FieldZero,
}

/// One field's value on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

fn varint(buf: &[u8], pos: &mut usize) -> Result<u64, WireError> {
    let mut value = 0u64;
    for shift in (0..70).step_by(7) {
        let b = *buf.get(*pos).ok_or(WireError::TruncatedVarint)?;
        *pos += 1;
        value |= u64::from(b & 0x7f).checked_shl(shift).unwrap_or(0);
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(WireError::VarintTooLong)
}

/// `(field number, value)` of every varint and length-delimited field, in wire order.
pub fn fields(buf: &[u8]) -> Result<Vec<(u64, Wire<'_>)>, WireError> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let tag = varint(buf, &mut pos)?;
        let field = tag >> 3;
        if field == 0 {
            return Err(WireError::FieldZero);
        }
        let skip = |pos: &mut usize, n: usize| -> Result<(), WireError> {
            *pos = pos
                .checked_add(n)
                .filter(|e| *e <= buf.len())
                .ok_or(WireError::Truncated(field))?;
            Ok(())
        };
        match tag & 7 {
            0 => out.push((field, Wire::Varint(varint(buf, &mut pos)?))),
            1 => skip(&mut pos, 8)?,
            5 => skip(&mut pos, 4)?,
            2 => {
                let len = usize::try_from(varint(buf, &mut pos)?).map_err(|_| WireError::Truncated(field))?;
                let start = pos;
                skip(&mut pos, len)?;
                out.push((field, Wire::Bytes(&buf[start..pos])));
            }
            wire_type => return Err(WireError::WireType { field, wire_type }),
        }
    }
    Ok(out)
}

pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A varint field (`int32`/`int64` negatives are sign-extended to 64 bits, as protobuf does).
pub fn put_varint_field(out: &mut Vec<u8>, field: u64, v: u64) {
    put_varint(out, field << 3);
    put_varint(out, v);
}

/// A length-delimited field (string, bytes, embedded message, map entry).
pub fn put_bytes_field(out: &mut Vec<u8>, field: u64, bytes: &[u8]) {
    put_varint(out, (field << 3) | 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, (-1i64) as u64, u64::MAX] {
            let mut buf = Vec::new();
            put_varint_field(&mut buf, 7, v);
            assert_eq!(fields(&buf).unwrap(), vec![(7, Wire::Varint(v))], "{v}");
        }
    }

    #[test]
    fn reads_skips_and_refuses() {
        let mut buf = Vec::new();
        put_bytes_field(&mut buf, 2, b"abc");
        buf.extend_from_slice(&[(3 << 3) | 5, 1, 2, 3, 4]); // fixed32, skipped
        put_varint_field(&mut buf, 16, 5);
        assert_eq!(
            fields(&buf).unwrap(),
            vec![(2, Wire::Bytes(b"abc")), (16, Wire::Varint(5))]
        );
        let cases: [(&[u8], WireError); 5] = [
            (&[0x12, 0x05, b'a'], WireError::Truncated(2)),
            (&[0x08], WireError::TruncatedVarint),
            (
                &[0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
                WireError::VarintTooLong,
            ),
            (&[0x0b], WireError::WireType { field: 1, wire_type: 3 }),
            (&[0x02, 0x00], WireError::FieldZero),
        ];
        for (input, want) in cases {
            assert_eq!(fields(input).unwrap_err(), want, "{input:?}");
        }
    }
}
