// SPDX-License-Identifier: GPL-2.0-or-later
// Rust names for the demangling tests, built with v0 mangling; the
// standard library's own functions keep the legacy mangling.
//   names [ROUNDS]   prints "names ROUNDS RESULT"
mod shapes {
    #[inline(never)]
    pub fn churn(n: u64) -> u64 {
        let mut t = 0u64;
        for i in 0..n {
            t = t.wrapping_add(i.wrapping_mul(3) ^ (t >> 7));
        }
        t
    }
}

fn main() {
    let n = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000000u64);
    println!("names {} {:x}", n, shapes::churn(n));
}
