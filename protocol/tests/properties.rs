//! Property tests: every message and command survives encode -> decode unchanged, and the
//! decoder survives any bytes and is in sync again by the next message.

use dgt_protocol::command::{CommandParser, MAX_COMMAND_LEN};
use dgt_protocol::ee::encode_ee_moves;
use dgt_protocol::message::{DraughtsSquares, id};
use dgt_protocol::{
    Battery, BoardDump, Bwtime, ClockCommand, ClockTime, Command, Decoded, Decoder, DgtSquare, EeEvent,
    FieldUpdate, HostInput, Message, PieceCode,
};
use proptest::prelude::*;

/// A message with its variable-length payload owned, so proptest can generate it.
#[derive(Clone, Debug)]
enum Owned {
    None,
    Dump([u8; 64]),
    Bwtime([u8; 7]),
    Field(u8, u8),
    BusAddress(u16),
    Serial(Vec<u8>),
    Trademark(Vec<u8>),
    Version(u8, u8),
    Draughts(bool, Vec<u8>),
    Battery(Vec<u8>),
    LongSerial(Vec<u8>),
    Unknown(u8, Vec<u8>),
}

impl Owned {
    fn message(&self) -> Message<'_> {
        match self {
            Owned::None => Message::None,
            Owned::Dump(raw) => Message::BoardDump(BoardDump { raw: *raw }),
            Owned::Bwtime(p) => Message::Bwtime(Bwtime::from_payload(*p)),
            Owned::Field(sq, raw) => Message::FieldUpdate(FieldUpdate {
                square: DgtSquare::new(*sq).expect("generated below 64"),
                raw: *raw,
            }),
            Owned::BusAddress(a) => Message::BusAddress(*a),
            Owned::Serial(t) => Message::SerialNumber(t),
            Owned::Trademark(t) => Message::Trademark(t),
            Owned::Version(a, b) => Message::Version { major: *a, minor: *b },
            Owned::Draughts(black, raw) => Message::DraughtsDump {
                squares: if *black { DraughtsSquares::Black } else { DraughtsSquares::White },
                raw,
            },
            Owned::Battery(p) => Message::Battery(Battery { payload: p }),
            Owned::LongSerial(t) => Message::LongSerialNumber(t),
            Owned::Unknown(i, p) => Message::Unknown { id: *i, payload: p },
        }
    }
}

fn seven_bit() -> impl Strategy<Value = u8> {
    0u8..0x80
}

fn text(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(seven_bit(), 0..max)
}

fn owned_message() -> impl Strategy<Value = Owned> {
    let known = [
        id::NONE,
        id::BOARD_DUMP,
        id::BWTIME,
        id::FIELD_UPDATE,
        id::EE_MOVES,
        id::BUS_ADDRESS,
        id::SERIAL_NUMBER,
        id::TRADEMARK,
        id::VERSION,
        id::DRAUGHTS_DUMP_BLACK,
        id::DRAUGHTS_DUMP_WHITE,
        id::BATTERY_STATUS,
        id::LONG_SERIAL_NUMBER,
    ];
    prop_oneof![
        Just(Owned::None),
        proptest::array::uniform32(0u8..16).prop_flat_map(|a| proptest::array::uniform32(0u8..16).prop_map(
            move |b| {
                let mut raw = [0u8; 64];
                raw[..32].copy_from_slice(&a);
                raw[32..].copy_from_slice(&b);
                Owned::Dump(raw)
            }
        )),
        proptest::array::uniform7(seven_bit()).prop_map(Owned::Bwtime),
        (0u8..64, seven_bit()).prop_map(|(s, r)| Owned::Field(s, r)),
        (0u16..0x4000).prop_map(Owned::BusAddress),
        text(16).prop_map(Owned::Serial),
        text(200).prop_map(Owned::Trademark),
        (seven_bit(), seven_bit()).prop_map(|(a, b)| Owned::Version(a, b)),
        (any::<bool>(), proptest::collection::vec(seven_bit(), 50)).prop_map(|(b, r)| Owned::Draughts(b, r)),
        text(16).prop_map(Owned::Battery),
        text(16).prop_map(Owned::LongSerial),
        ((0x16u8..0x80).prop_filter("not a known id", move |i| !known.contains(i)), text(40))
            .prop_map(|(i, p)| Owned::Unknown(i, p)),
    ]
}

fn clock_time() -> impl Strategy<Value = ClockTime> {
    (0u8..10, 0u8..60, 0u8..60).prop_map(|(h, m, s)| ClockTime { hours: h, minutes: m, seconds: s })
}

fn command() -> impl Strategy<Value = Command> {
    let simple = prop_oneof![
        Just(Command::Reset),
        Just(Command::SendClock),
        Just(Command::SendBoard),
        Just(Command::SendUpdate),
        Just(Command::SendUpdateBoard),
        Just(Command::SendUpdateNice),
        Just(Command::ReturnSerialNumber),
        Just(Command::ReturnLongSerialNumber),
        Just(Command::ReturnBusAddress),
        Just(Command::SendTrademark),
        Just(Command::SendVersion),
        Just(Command::SendBatteryStatus),
        Just(Command::SendEeMoves),
    ];
    let clock = prop_oneof![
        (proptest::array::uniform6(seven_bit()), seven_bit(), seven_bit())
            .prop_map(|(segments, icons, beep)| ClockCommand::XlDisplay { segments, icons, beep }),
        proptest::array::uniform5(seven_bit()).prop_map(|i| ClockCommand::Icons {
            left: i[0],
            right: i[1],
            left_period: i[2],
            right_period: i[3],
            special: i[4]
        }),
        Just(ClockCommand::End),
        Just(ClockCommand::Button),
        Just(ClockCommand::Version),
        (clock_time(), any::<bool>(), clock_time(), any::<bool>(), 0u8..16).prop_map(|(l, lu, r, ru, f)| {
            ClockCommand::SetAndRun { left: l, left_counts_up: lu, right: r, right_counts_up: ru, flags: f }
        }),
        seven_bit().prop_map(|units| ClockCommand::Beep { units }),
        (proptest::array::uniform8(seven_bit()), seven_bit())
            .prop_map(|(text, beep)| ClockCommand::Ascii { text, beep }),
        (proptest::array::uniform11(seven_bit()), seven_bit())
            .prop_map(|(text, beep)| ClockCommand::Rev2Ascii { text, beep }),
    ];
    prop_oneof![simple, clock.prop_map(Command::Clock)]
}

fn ee_event() -> impl Strategy<Value = EeEvent> {
    prop_oneof![
        (0u8..64, 0u8..16, any::<bool>()).prop_map(|(s, p, quick)| EeEvent::Field {
            square: DgtSquare::new(s).expect("below 64"),
            piece: PieceCode::from_nibble(p),
            quick
        }),
        (any::<bool>(), clock_time()).prop_map(|(left, time)| EeEvent::Time {
            side: if left { dgt_protocol::ClockSide::Left } else { dgt_protocol::ClockSide::Right },
            time
        }),
        prop::sample::select(vec![
            0x00u8, 0x6A, 0x6B, 0x6C, 0x6D, 0x6E, 0x6F, 0x7A, 0x7B, 0x7C, 0x7D, 0x7E, 0x7F
        ])
        .prop_map(|b| EeEvent::parse(&[b])),
    ]
}

/// Decodes bytes into debug strings of everything the decoder reports.
fn decode_all(bytes: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut decoder: Decoder = Decoder::new();
    decoder.feed(bytes, |d| out.push(format!("{d:?}")));
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn every_message_round_trips(owned in owned_message()) {
        let msg = owned.message();
        let mut buf = vec![0u8; msg.encoded_len()];
        let n = msg.encode(&mut buf).expect("generated messages are encodable");
        prop_assert_eq!(n, buf.len());
        prop_assert!(buf[1..].iter().all(|b| b & 0x80 == 0), "only the header byte has bit 7");
        let mut decoder: Decoder = Decoder::new();
        let mut got = Vec::new();
        decoder.feed(&buf, |d| got.push(d == Decoded::Message(msg)));
        prop_assert_eq!(got, vec![true]);
    }

    #[test]
    fn bwtime_payloads_are_kept_losslessly(p in proptest::array::uniform7(seven_bit())) {
        let b = Bwtime::from_payload(p);
        prop_assert_eq!(b.to_payload(), p);
        prop_assert_eq!(Bwtime::from_payload(b.to_payload()), b);
    }

    #[test]
    fn every_command_round_trips(cmd in command()) {
        let mut buf = [0u8; MAX_COMMAND_LEN];
        let n = cmd.encode(&mut buf).expect("generated commands are encodable");
        prop_assert!(buf[..n].iter().all(|b| *b < 0x80), "a single-board command stays below 0x80");
        let mut parser = CommandParser::new();
        let got: Vec<HostInput> = buf[..n].iter().filter_map(|&b| parser.push(b)).collect();
        prop_assert_eq!(got, vec![HostInput::Command(cmd)]);
    }

    #[test]
    fn ee_dumps_round_trip_as_event_streams(events in proptest::collection::vec(ee_event(), 0..300)) {
        let mut buf = vec![0u8; 3 + 3 * events.len()];
        let n = encode_ee_moves(&events, &mut buf).expect("encodable");
        let mut decoder: Decoder<64> = Decoder::new();
        let mut got = Vec::new();
        let mut starts = 0;
        decoder.feed(&buf[..n], |d| match d {
            Decoded::EeEvent(e) => got.push(e),
            Decoded::EeMovesStart { total_len } => { starts += 1; assert_eq!(usize::from(total_len), n) }
            other => panic!("unexpected {other:?}"),
        });
        prop_assert_eq!(starts, 1);
        prop_assert_eq!(got, events);
    }

    #[test]
    fn garbage_never_panics_and_sync_returns_by_the_next_message(
        garbage in proptest::collection::vec(any::<u8>(), 0..600),
        owned in owned_message(),
        split in any::<prop::sample::Index>(),
    ) {
        let msg = owned.message();
        let mut bytes = garbage.clone();
        let start = bytes.len();
        bytes.resize(start + msg.encoded_len(), 0);
        msg.encode(&mut bytes[start..]).expect("encodable");
        // Split the stream at an arbitrary point, as read() would.
        let cut = split.index(bytes.len() + 1);
        let mut decoder: Decoder = Decoder::new();
        let mut last = None;
        let mut accounted = 0usize;
        let mut saw_ee = false;
        for part in [&bytes[..cut], &bytes[cut..]] {
            decoder.feed(part, |d| {
                match d {
                    Decoded::Noise { len } => accounted += len,
                    Decoded::Message(m) => accounted += m.encoded_len(),
                    Decoded::Skipped { total_len, .. } => accounted += usize::from(total_len),
                    Decoded::EeMovesStart { .. } | Decoded::EeEvent(_) => saw_ee = true,
                }
                last = Some(d == Decoded::Message(msg));
            });
        }
        prop_assert_eq!(last, Some(true), "the message after the garbage is decoded");
        if !saw_ee {
            prop_assert_eq!(accounted, bytes.len(), "every byte is either in a message or reported as noise");
        }
    }

    #[test]
    fn small_buffers_never_overflow(bytes in proptest::collection::vec(any::<u8>(), 0..2000)) {
        let mut decoder: Decoder<8> = Decoder::new();
        let mut count = 0usize;
        decoder.feed(&bytes, |_| count += 1);
        prop_assert!(count <= bytes.len());
        prop_assert_eq!(decode_all(&bytes).len(), {
            let mut d: Decoder = Decoder::new();
            let mut c = 0;
            for &b in &bytes { if d.push(b).is_some() { c += 1 } }
            c
        });
    }
}
