#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| tenure_testkit::fuzz::record_decoder(data));
