//! Writes the results page of a synthetic results set (`claimflow::view::synthetic`) through the
//! same rendering a run uses, for `benches/view/run.sh` to load in a browser.
//!
//! `cargo run --example view_bench -- OUT.html [CLAIMS] [ARMS]` (default 10000 claims, 10 arms).

fn main() {
    let mut args = std::env::args().skip(1);
    let out = args
        .next()
        .expect("usage: view_bench OUT.html [CLAIMS] [ARMS]");
    let claims: usize = args
        .next()
        .map_or(10_000, |n| n.parse().expect("CLAIMS is a number"));
    let arms: usize = args
        .next()
        .map_or(10, |n| n.parse().expect("ARMS is a number"));
    let started = std::time::Instant::now();
    let inputs = claimflow::view::synthetic::inputs(claims, arms, 1);
    let page = claimflow::view::render(&inputs);
    std::fs::write(&out, &page).expect("write the page");
    eprintln!(
        "{claims} claims x {arms} arms: {} bytes, rendered in {:.2?}",
        page.len(),
        started.elapsed()
    );
}
