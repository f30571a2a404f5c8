//! `tailship tail`: lines pushed during it are printed once, and it goes on
//! after a 429 in the middle.

use super::*;

#[test]
fn tail_prints_lines_pushed_during_it_once_even_across_equal_timestamp_runs() {
    let r = Receiver::start(&[]);
    // An old line that --since 0 must not print.
    assert_eq!(r.push(&push_body(&[("job", "t")], &[(now_ns() - 60_000_000_000, "old")])).status, 204);
    let tail = Tail::start(
        &r.base,
        &["tail", r#"{job="t"}"#, "--since", "10s", "--interval", "100ms", "--delay", "1s", "--batch", "4"],
    );
    let mut want = Vec::new();
    for round in 0..8 {
        // A run of 9 entries at one timestamp over two streams (a batch is 4,
        // so polls end inside the run), then a few at their own timestamps.
        let ts = now_ns();
        let run_a: Vec<String> = (0..5).map(|i| format!("r{round} a{i}")).collect();
        let run_b: Vec<String> = (0..4).map(|i| format!("r{round} b{i}")).collect();
        let a: Vec<(i64, &str)> = run_a.iter().map(|l| (ts, l.as_str())).collect();
        let b: Vec<(i64, &str)> = run_b.iter().map(|l| (ts, l.as_str())).collect();
        let body = push_body_streams(&[(&[("job", "t"), ("s", "a")], &a), (&[("job", "t"), ("s", "b")], &b)]);
        assert_eq!(r.push(&body).status, 204);
        let singles: Vec<String> = (0..3).map(|i| format!("r{round} single{i}")).collect();
        let ts2 = now_ns();
        let v: Vec<(i64, &str)> = singles.iter().enumerate().map(|(i, l)| (ts2 + i as i64, l.as_str())).collect();
        assert_eq!(r.push(&push_body(&[("job", "t"), ("s", "c")], &v)).status, 204);
        want.extend(run_a);
        want.extend(run_b);
        want.extend(singles);
        // Spread the pushes over several polls.
        std::thread::sleep(Duration::from_millis(150));
    }
    tail.wait_for_lines(&want);
    let got = tail.stop(libc::SIGINT);
    assert_each_once(&got, &want);
}

#[test]
fn tail_goes_on_after_429_in_the_middle() {
    let api = fake_api(&[2, 3]);
    let t0 = now_ns() - 10_000_000_000;
    let mut want: Vec<String> = Vec::new();
    {
        let mut e = api.entries.lock().expect("lock");
        for i in 0..30 {
            let line = format!("before {i:02}");
            e.push((t0 + i, line.clone()));
            want.push(line);
        }
    }
    let tail =
        Tail::start(&api.url, &["tail", r#"{job="fake"}"#, "--since", "1m", "--interval", "100ms", "--batch", "7"]);
    tail.wait_for_lines(&want);
    assert!(api.requests.load(Ordering::SeqCst) >= 4);
    let err = tail.stderr();
    assert!(err.contains("429"), "a note about the 429 on stderr: {err}");
    // It goes on: lines that arrive after the failures are printed too.
    let now = now_ns();
    {
        let mut e = api.entries.lock().expect("lock");
        for i in 0..10 {
            let line = format!("after {i:02}");
            e.push((now + i, line.clone()));
            want.push(line);
        }
    }
    tail.wait_for_lines(&want);
    let got = tail.stop(libc::SIGTERM);
    assert_each_once(&got, &want);
}
