//! Benchmark helper: what a 12-megapixel photo costs when it is attached. Encodes a
//! 4000×3000 JPEG (a photo-like gradient with grain) once, then times the upload's image step
//! (`uploads::image::process`: metadata stripped, orientation read, a 1024-px preview) on
//! the calling thread and through `process_blocking` (a blocking thread behind the semaphore,
//! as a request runs it). Prints one JSON line. Used by `scripts/bench`.

use std::time::Instant;

use mobius::uploads::image::{MAX_PARALLEL_IMAGES, process, process_blocking};
use mobius::uploads::sniff::Raster;
use serde_json::json;

const WIDTH: u32 = 4000;
const HEIGHT: u32 = 3000;
const ROUNDS: usize = 9;

fn photo() -> Vec<u8> {
    let mut seed = 0x2545_f491_u32;
    let img = image::RgbImage::from_fn(WIDTH, HEIGHT, |x, y| {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        let grain = (seed % 24) as u8;
        image::Rgb([(x * 200 / WIDTH) as u8 + grain, (y * 180 / HEIGHT) as u8 + grain, 90 + grain])
    });
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 90).encode_image(&img).expect("encode");
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let bytes = photo();
    let mut inline = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let started = Instant::now();
        let done = process(&bytes, Raster::Jpeg).expect("process");
        inline.push(started.elapsed().as_secs_f64() * 1000.0);
        assert!(done.preview.is_some());
    }
    let limit = tokio::sync::Semaphore::new(MAX_PARALLEL_IMAGES);
    let mut blocking = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let started = Instant::now();
        let done = process_blocking(&limit, bytes.clone(), Raster::Jpeg).await.expect("process");
        blocking.push(started.elapsed().as_secs_f64() * 1000.0);
        assert!(done.preview.is_some());
    }
    println!(
        "{}",
        json!({
            "megapixels": f64::from(WIDTH * HEIGHT) / 1e6,
            "jpeg_mib": bytes.len() as f64 / 1048576.0,
            "inline_ms": inline,
            "inline_p50_ms": median(inline.clone()),
            "blocking_ms": blocking,
            "blocking_p50_ms": median(blocking.clone()),
        })
    );
}
