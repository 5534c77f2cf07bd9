//! Decoder throughput on the real captures and on synthetic traffic.
//!
//! Run: `cargo bench -p dgt-protocol --bench decoder`. The bar (brief): 200 MB/s on one core.

use base64::Engine;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dgt_protocol::{
    BoardDump, Bwtime, ClockStatus, ClockTime, ClockTimes, Decoded, Decoder, DgtSquare, FieldUpdate, Message,
    PieceCode, SideFlags, SideReading,
};
use std::hint::black_box;
use std::path::PathBuf;

fn captures() -> Vec<u8> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/board-captures");
    let mut all = Vec::new();
    for name in ["1", "2", "johan"] {
        let text = std::fs::read_to_string(dir.join(format!("{name}.inbytes"))).expect("capture");
        for line in text.lines() {
            all.extend(base64::engine::general_purpose::STANDARD.decode(line.trim()).expect("base64"));
        }
    }
    all
}

/// Typical live traffic: field updates and clock times, a dump now and then, some noise.
fn synthetic() -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 80];
    let mut push = |m: Message<'_>, out: &mut Vec<u8>| {
        let n = m.encode(&mut buf).expect("encodable");
        out.extend_from_slice(&buf[..n]);
    };
    let side = |s: u32| SideReading { time: ClockTime::from_seconds(s), flags: SideFlags::default() };
    for i in 0..20_000u32 {
        let sq = DgtSquare::new((i % 64) as u8).expect("below 64");
        push(Message::FieldUpdate(FieldUpdate::new(sq, PieceCode::from_nibble((i % 13) as u8))), &mut out);
        let times =
            ClockTimes { right: side(5400 - i % 5400), left: side(i % 5400), status: ClockStatus(0x09) };
        push(Message::Bwtime(Bwtime::Times(times)), &mut out);
        if i % 50 == 0 {
            push(Message::BoardDump(BoardDump::EMPTY), &mut out);
        }
        if i % 500 == 0 {
            out.extend_from_slice(&[0x13, 0x37, 0x00]);
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    for (name, bytes) in [("captures", captures()), ("synthetic", synthetic())] {
        let mut group = c.benchmark_group("decoder");
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(format!("{name}/feed"), |b| {
            b.iter(|| {
                let mut decoder: Decoder = Decoder::new();
                let mut n = 0usize;
                decoder.feed(black_box(&bytes), |d| {
                    if let Decoded::Message(m) = d {
                        n += usize::from(m.id());
                    }
                });
                n
            })
        });
        group.bench_function(format!("{name}/push"), |b| {
            b.iter(|| {
                let mut decoder: Decoder = Decoder::new();
                let mut n = 0usize;
                for &byte in black_box(&bytes) {
                    if let Some(Decoded::Message(m)) = decoder.push(byte) {
                        n += usize::from(m.id());
                    }
                }
                n
            })
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
