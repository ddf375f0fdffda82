//! Fuzz target `fpdu`: an FPDU stream from a hostile peer into a connected software iWARP responder (placement, protection, reassembly, Terminates; the same outcome whole and octet by octet), and every MPA/DDP/RDMAP codec's decode/re-encode round trip.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        rpcrdma_iwarp::fuzzing::codec_roundtrip(data);
        rpcrdma_iwarp::fuzzing::fpdu_stream(data);
        rpcrdma_iwarp::fuzzing::fpdu_stream_pieces_agree(data);
    });
}
