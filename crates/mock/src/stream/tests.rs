use super::*;
use std::sync::{Arc, Mutex};

#[test]
fn pieces_are_a_few_characters_on_char_boundaries() {
    let cases: [(&str, usize, &[&str]); 7] = [
        ("", 6, &[]),
        ("abcdefgh", 6, &["abcdef", "gh"]),
        ("abcdef", 6, &["abcdef"]),
        ("ééééééé", 3, &["ééé", "ééé", "é"]),
        ("a🙂b", 1, &["a", "🙂", "b"]),
        ("abc", 0, &["a", "b", "c"]),
        ("abc", 100, &["abc"]),
    ];
    for (text, chars, expected) in cases {
        assert_eq!(pieces(text, chars), expected, "{text:?} by {chars}");
    }
}

#[test]
fn explicit_deltas_win_over_even_pieces() {
    let explicit = vec!["SUGG".to_owned(), "ESTED".to_owned()];
    assert_eq!(deltas("SUGGESTED", Some(&explicit), 2), ["SUGG", "ESTED"]);
    assert_eq!(deltas("SUGGESTED", None, 4), ["SUGG", "ESTE", "D"]);
}

/// The stream's writes (errors as their message) and the recorded end.
type Sent = (Vec<Result<Bytes, String>>, Option<StreamEnd>);

fn recorder() -> (
    Arc<Mutex<Option<StreamEnd>>>,
    impl FnOnce(StreamEnd) + Send + 'static,
) {
    let slot = Arc::new(Mutex::new(None));
    let into = Arc::clone(&slot);
    (slot, move |end| *into.lock().unwrap() = Some(end))
}

/// Reads the stream of `frames` to its end (or only `take` writes of it, then drops it).
async fn send(frames: &[&str], broken: bool, pacing: Pacing, take: Option<usize>) -> Sent {
    let frames: Vec<String> = frames.iter().map(|f| (*f).to_owned()).collect();
    let (slot, record) = recorder();
    let tally = Tally::new(&frames, record);
    let mut stream = sse_body(frames, broken, pacing, tally);
    let mut writes = Vec::new();
    while take.is_none_or(|n| writes.len() < n) {
        match stream.next().await {
            Some(item) => writes.push(item.map_err(|e| e.to_string())),
            None => break,
        }
    }
    drop(stream);
    let end = *slot.lock().unwrap();
    (writes, end)
}

fn ok(writes: &[Result<Bytes, String>]) -> Vec<Bytes> {
    writes.iter().filter_map(|w| w.clone().ok()).collect()
}

const FRAMES: [&str; 3] = ["data: é🙂\n\n", "data: ab\n\n", "data: [DONE]\n\n"];

fn end(frames_sent: usize, completed: bool) -> Option<StreamEnd> {
    Some(StreamEnd {
        frames_sent,
        frames_total: FRAMES.len(),
        completed,
    })
}

#[tokio::test]
async fn frames_are_sent_whole_or_recut_and_the_end_is_recorded() {
    let whole: Vec<Bytes> = FRAMES.iter().map(|f| Bytes::from(*f)).collect();
    let all = FRAMES.concat();
    let chunked = |n: usize| Pacing {
        chunk_bytes: Some(n),
        ..Pacing::default()
    };
    // (pacing, the sizes of the writes)
    let cases: [(Pacing, Vec<usize>); 4] = [
        (Pacing::default(), FRAMES.iter().map(|f| f.len()).collect()),
        (chunked(5), {
            let mut sizes = vec![5; all.len() / 5];
            sizes.push(all.len() % 5);
            sizes
        }),
        (chunked(1), vec![1; all.len()]),
        (chunked(10_000), vec![all.len()]),
    ];
    for (pacing, sizes) in cases {
        let (writes, recorded) = send(&FRAMES, false, pacing, None).await;
        let bytes = ok(&writes);
        assert_eq!(bytes.len(), writes.len(), "{pacing:?}: no error");
        assert_eq!(
            bytes.iter().map(Bytes::len).collect::<Vec<_>>(),
            sizes,
            "{pacing:?}"
        );
        assert_eq!(bytes.concat(), all.as_bytes(), "{pacing:?}");
        assert_eq!(recorded, end(FRAMES.len(), true), "{pacing:?}");
        if pacing == Pacing::default() {
            assert_eq!(bytes, whole);
        }
    }
    // One-byte writes split "é" and "🙂" between writes.
    let (writes, _) = send(&FRAMES, false, chunked(1), None).await;
    assert!(ok(&writes).iter().any(|w| std::str::from_utf8(w).is_err()));
}

#[tokio::test]
async fn a_pause_comes_between_frames_and_flushes_what_is_pending() {
    let pacing = Pacing {
        interval: Duration::from_millis(20),
        chunk_bytes: Some(4),
    };
    let started = std::time::Instant::now();
    let (writes, recorded) = send(&FRAMES, false, pacing, None).await;
    assert!(started.elapsed() >= Duration::from_millis(40));
    let bytes = ok(&writes);
    assert_eq!(bytes.concat(), FRAMES.concat().as_bytes());
    assert!(bytes.iter().all(|w| w.len() <= 4));
    // No write spans two frames: each frame's bytes end a write.
    let mut at = 0;
    let ends: Vec<usize> = bytes
        .iter()
        .map(|w| {
            at += w.len();
            at
        })
        .collect();
    let mut frame_end = 0;
    for frame in FRAMES {
        frame_end += frame.len();
        assert!(ends.contains(&frame_end), "{frame:?}");
    }
    assert_eq!(recorded, end(3, true));
}

#[tokio::test]
async fn a_broken_stream_sends_its_frames_then_fails() {
    let (writes, recorded) = send(&FRAMES, true, Pacing::default(), None).await;
    assert_eq!(writes.len(), FRAMES.len() + 1);
    assert!(writes[..FRAMES.len()].iter().all(Result::is_ok));
    let last = writes.last().cloned().unwrap().unwrap_err();
    assert!(last.contains("broken_stream"), "{last}");
    assert_eq!(recorded, end(3, true));
}

#[tokio::test]
async fn an_ended_stream_polled_again_stays_ended() {
    for broken in [false, true] {
        let frames = vec!["data: x\n\n".to_owned()];
        let tally = Tally::new(&frames, |_| {});
        let mut stream = sse_body(frames, broken, Pacing::default(), tally);
        while stream.next().await.is_some() {}
        assert!(stream.next().await.is_none(), "broken: {broken}");
    }
}

#[tokio::test]
async fn a_stream_dropped_early_is_recorded_as_not_completed() {
    let four = Pacing {
        chunk_bytes: Some(4),
        ..Pacing::default()
    };
    // (pacing, writes read, frames sent): the first frame is 14 bytes.
    let cases: [(Pacing, usize, usize); 4] = [
        (Pacing::default(), 0, 0),
        (Pacing::default(), 2, 2),
        (four, 3, 0),
        (four, 4, 1),
    ];
    for (pacing, take, frames_sent) in cases {
        let (writes, recorded) = send(&FRAMES, false, pacing, Some(take)).await;
        assert_eq!(writes.len(), take);
        assert_eq!(recorded, end(frames_sent, false), "{pacing:?} {take}");
    }
    // A tally dropped before its stream was made (the client left during the delay).
    let (slot, record) = recorder();
    let frames: Vec<String> = FRAMES.iter().map(|f| (*f).to_owned()).collect();
    drop(Tally::new(&frames, record));
    assert_eq!(*slot.lock().unwrap(), end(0, false));
}
