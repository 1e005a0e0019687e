// An async call on a pipeline built without `.timer(..)`.
use tripwire::Pipeline;

fn main() {
    let pipeline = Pipeline::builder().build();
    let _ = pipeline.call_async(|| async { Ok::<u32, std::io::Error>(1) });
}
