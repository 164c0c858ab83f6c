//! A random source that replays a fuzzer's bytes, so every generator written against
//! `rand::Rng` runs unchanged in a fuzz target: the fuzzer's mutations become choices. Once
//! the bytes run out it yields zeros, which `rand`'s range sampling accepts (it never loops),
//! so a case always ends.

use rand::RngCore;

pub struct ByteRng<'a> {
    bytes: &'a [u8],
}

impl<'a> ByteRng<'a> {
    pub fn new(bytes: &'a [u8]) -> ByteRng<'a> {
        ByteRng { bytes }
    }

    pub fn is_exhausted(&self) -> bool {
        self.bytes.is_empty()
    }
}

impl RngCore for ByteRng<'_> {
    fn next_u32(&mut self) -> u32 {
        let mut word = [0u8; 4];
        self.fill_bytes(&mut word);
        u32::from_le_bytes(word)
    }

    fn next_u64(&mut self) -> u64 {
        let mut word = [0u8; 8];
        self.fill_bytes(&mut word);
        u64::from_le_bytes(word)
    }

    fn fill_bytes(&mut self, destination: &mut [u8]) {
        let taken = destination.len().min(self.bytes.len());
        destination[..taken].copy_from_slice(&self.bytes[..taken]);
        destination[taken..].fill(0);
        self.bytes = &self.bytes[taken..];
    }

    fn try_fill_bytes(&mut self, destination: &mut [u8]) -> Result<(), rand::Error> {
        self.fill_bytes(destination);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn exhausted_bytes_still_answer_every_range() {
        let mut rng = ByteRng::new(&[0xff, 0x01]);
        let _ = rng.gen_range(0..10u32);
        assert!(rng.is_exhausted());
        for _ in 0..100 {
            assert_eq!(rng.gen_range(3..10u64), 3);
            let _ = rng.gen_bool(0.5);
        }
    }
}
