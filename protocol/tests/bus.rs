//! Property tests of bus mode: every reply and command survives encode -> decode unchanged,
//! a reply mangled anywhere after its header is never taken for a good one, and the
//! decoder survives any bytes and is in sync again by the next reply.

use dgt_protocol::bus::{BROADCAST, MAX_ADDRESS};
use dgt_protocol::ee::encode_events;
use dgt_protocol::{
    BoardDump, BusCommand, BusCommandKind, BusCommandParser, BusData, BusDecoded, BusDecoder, BusInput,
    BusReply, Bwtime, ClockSide, ClockTime, DgtSquare, EeEvent, EeEvents, PieceCode,
};
use proptest::prelude::*;

/// A reply with its variable-length data owned, so proptest can generate it.
#[derive(Clone, Debug)]
enum Owned {
    Dump([u8; 64]),
    Bwtime([u8; 7]),
    Update(Vec<u8>),
    FromStart(Vec<u8>),
    Ping,
    StartGameWritten,
    Version(Option<(u8, u8)>),
    Draughts(Vec<u8>),
    Unknown(u8, Vec<u8>),
}

impl Owned {
    fn data(&self) -> BusData<'_> {
        match self {
            Owned::Dump(raw) => BusData::BoardDump(BoardDump { raw: *raw }),
            Owned::Bwtime(p) => BusData::Bwtime(Bwtime::from_payload(*p)),
            Owned::Update(e) => BusData::Update(EeEvents::new(e)),
            Owned::FromStart(e) => BusData::FromStart(EeEvents::new(e)),
            Owned::Ping => BusData::Ping,
            Owned::StartGameWritten => BusData::StartGameWritten,
            Owned::Version(v) => BusData::Version(*v),
            Owned::Draughts(d) => BusData::BoardDump50B(d),
            Owned::Unknown(k, d) => BusData::Unknown { kind: *k, data: d },
        }
    }
}

fn seven_bit() -> impl Strategy<Value = u8> {
    0u8..0x80
}

fn clock_time() -> impl Strategy<Value = ClockTime> {
    (0u8..10, 0u8..60, 0u8..60).prop_map(|(h, m, s)| ClockTime { hours: h, minutes: m, seconds: s })
}

fn ee_event() -> impl Strategy<Value = EeEvent> {
    prop_oneof![
        (0u8..64, 0u8..16, any::<bool>()).prop_map(|(s, p, quick)| EeEvent::Field {
            square: DgtSquare::new(s).expect("below 64"),
            piece: PieceCode::from_nibble(p),
            quick
        }),
        (any::<bool>(), clock_time()).prop_map(|(left, time)| EeEvent::Time {
            side: if left { ClockSide::Left } else { ClockSide::Right },
            time
        }),
        prop::sample::select(vec![0x00u8, 0x6A, 0x6C, 0x6D, 0x6E, 0x6F, 0x7A, 0x7B, 0x7C, 0x7F])
            .prop_map(|b| EeEvent::parse(&[b])),
    ]
}

fn events() -> impl Strategy<Value = (Vec<EeEvent>, Vec<u8>)> {
    proptest::collection::vec(ee_event(), 0..120).prop_map(|events| {
        let mut raw = vec![0u8; 3 * events.len()];
        let n = encode_events(&events, &mut raw).expect("encodable");
        raw.truncate(n);
        (events, raw)
    })
}

fn owned() -> impl Strategy<Value = Owned> {
    prop_oneof![
        proptest::collection::vec(0u8..16, 64).prop_map(|v| {
            let mut raw = [0u8; 64];
            raw.copy_from_slice(&v);
            Owned::Dump(raw)
        }),
        proptest::array::uniform7(seven_bit()).prop_map(Owned::Bwtime),
        events().prop_map(|(_, raw)| Owned::Update(raw)),
        events().prop_map(|(_, raw)| Owned::FromStart(raw)),
        Just(Owned::Ping),
        Just(Owned::StartGameWritten),
        proptest::option::of((seven_bit(), seven_bit())).prop_map(Owned::Version),
        proptest::collection::vec(seven_bit(), 50).prop_map(Owned::Draughts),
        ((0x0Bu8..0x80), proptest::collection::vec(seven_bit(), 0..40))
            .prop_map(|(k, d)| Owned::Unknown(k, d)),
    ]
}

fn address() -> impl Strategy<Value = u16> {
    0u16..=MAX_ADDRESS
}

fn encode(reply: &BusReply<'_>) -> Vec<u8> {
    let mut buf = vec![0u8; reply.encoded_len()];
    let n = reply.encode(&mut buf).expect("generated replies are encodable");
    assert_eq!(n, buf.len());
    buf
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn every_reply_round_trips(owned in owned(), address in address()) {
        let reply = BusReply::new(address, owned.data());
        let buf = encode(&reply);
        prop_assert!(buf[1..].iter().all(|b| b & 0x80 == 0), "only the header byte has bit 7");
        let mut decoder: BusDecoder<512> = BusDecoder::new();
        let mut got = Vec::new();
        decoder.feed(&buf, |d| got.push(d == BusDecoded::Reply(reply)));
        prop_assert_eq!(got, vec![true]);
    }

    #[test]
    fn changes_round_trip_as_event_streams((events, raw) in events(), address in address()) {
        let reply = BusReply::new(address, BusData::Update(EeEvents::new(&raw)));
        let buf = encode(&reply);
        let mut decoder: BusDecoder<512> = BusDecoder::new();
        let mut got = Vec::new();
        decoder.feed(&buf, |d| match d {
            BusDecoded::Reply(BusReply { data: BusData::Update(e), .. }) => got.extend(e.iter()),
            other => panic!("unexpected {other:?}"),
        });
        prop_assert_eq!(got, events);
    }

    #[test]
    fn every_command_round_trips(k in 0usize..13, address in address()) {
        let cmd = BusCommand::new(BusCommandKind::ALL[k], address);
        let bytes = cmd.to_bytes().expect("addresses up to 14 bits");
        prop_assert!(bytes[0] >= 0x80 && bytes[1..].iter().all(|b| *b < 0x80));
        let mut parser = BusCommandParser::new();
        let got: Vec<BusInput> = bytes.iter().filter_map(|&b| parser.push(b)).collect();
        prop_assert_eq!(got, vec![BusInput::Command(cmd)]);
        prop_assert_eq!(cmd.is_broadcast(), address == BROADCAST);
    }

    #[test]
    fn a_changed_address_data_or_checksum_byte_is_never_a_good_reply(
        owned in owned(),
        address in address(),
        at in any::<prop::sample::Index>(),
        delta in 1u8..0x80,
    ) {
        let reply = BusReply::new(address, owned.data());
        let mut buf = encode(&reply);
        // Any 7-bit change of the address, the data or the checksum keeps the framing, so
        // only the checksum can catch it, and a one-byte change always changes a 7-bit sum.
        // (A changed length byte moves the frame's end: the byte taken for the checksum
        // then matches by chance once in 128, a limit of the protocol's checksum.)
        let i = 3 + at.index(buf.len() - 3);
        buf[i] = (buf[i] + delta) & 0x7F;
        let mut decoder: BusDecoder<512> = BusDecoder::new();
        let mut good = Vec::new();
        decoder.feed(&buf, |d| if let BusDecoded::Reply(r) = d { good.push(format!("{r:?}")) });
        prop_assert!(good.is_empty(), "a mangled reply passed: {:?}", good);
    }

    #[test]
    fn garbage_never_panics_and_sync_returns_by_the_next_reply(
        garbage in proptest::collection::vec(any::<u8>(), 0..600),
        owned in owned(),
        address in address(),
        split in any::<prop::sample::Index>(),
    ) {
        let reply = BusReply::new(address, owned.data());
        let mut bytes = garbage.clone();
        bytes.extend(encode(&reply));
        let cut = split.index(bytes.len() + 1);
        let mut decoder: BusDecoder<512> = BusDecoder::new();
        let mut last = None;
        let mut accounted = 0usize;
        for part in [&bytes[..cut], &bytes[cut..]] {
            decoder.feed(part, |d| {
                accounted += match d {
                    BusDecoded::Noise { len } => len,
                    BusDecoded::Reply(r) => r.encoded_len(),
                    BusDecoded::BadChecksum { total_len, .. } | BusDecoded::Skipped { total_len, .. } => {
                        usize::from(total_len)
                    }
                };
                last = Some(d == BusDecoded::Reply(reply));
            });
        }
        prop_assert_eq!(last, Some(true), "the reply after the garbage is decoded");
        prop_assert_eq!(accounted, bytes.len(), "every byte is in a frame or reported as noise");
    }

    #[test]
    fn small_buffers_never_overflow(bytes in proptest::collection::vec(any::<u8>(), 0..2000)) {
        let mut decoder: BusDecoder<8> = BusDecoder::new();
        let mut count = 0usize;
        decoder.feed(&bytes, |_| count += 1);
        prop_assert!(count <= bytes.len());
        let mut parser = BusCommandParser::new();
        for &b in &bytes {
            let _ = parser.push(b);
        }
    }
}
