//! Generates the A2A gRPC binding's messages and service from `proto/a2a.proto`: prost types
//! with tonic's server and client, and ProtoJSON serde for them (pbjson). No system `protoc`:
//! protox compiles the file.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/a2a.proto");
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    let descriptors = out.join("a2a_descriptor.bin");
    let fds = protox::compile(["a2a.proto"], ["proto"])?;
    std::fs::write(&descriptors, prost::Message::encode_to_vec(&fds))?;
    tonic_prost_build::configure()
        .compile_well_known_types(true)
        .extern_path(".google.protobuf", "::pbjson_types")
        .compile_fds(fds)?;
    pbjson_build::Builder::new()
        .register_descriptors(&std::fs::read(&descriptors)?)?
        .ignore_unknown_fields()
        .build(&[".lf.a2a.v1"])?;
    Ok(())
}
