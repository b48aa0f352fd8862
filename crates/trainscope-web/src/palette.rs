//! The colour-blind-safe palette (Okabe & Ito, 2008) and the fixed colour of
//! each breakdown component, so a colour means the same thing in every chart
//! and run: compute blues/green, communication groups orange/purple/yellow/
//! vermillion, bubble grey.

/// Okabe-Ito: black, orange, sky blue, bluish green, yellow, blue,
/// vermillion, reddish purple.
pub const OKABE_ITO: [(u8, u8, u8); 8] = [
    (0, 0, 0),
    (230, 159, 0),
    (86, 180, 233),
    (0, 158, 115),
    (240, 228, 66),
    (0, 114, 178),
    (213, 94, 0),
    (204, 121, 167),
];

/// Neutral grey for idle time (bubble) and "other".
pub const GREY: (u8, u8, u8) = (153, 153, 153);

/// The host lane's pale steel blue (the timeline's host launches): the
/// GPU idle waiting for launches ("host_bound") in the breakdown.
pub const HOST: (u8, u8, u8) = (166, 189, 215);

/// Colour of a breakdown key (see [`crate::views::Segment`]); unknown keys
/// take palette colours by position, skipping black.
pub fn colour_for(key: &str, index: usize) -> (u8, u8, u8) {
    match key {
        "compute" | "compute.fwd" => OKABE_ITO[5],
        "compute.ig" => OKABE_ITO[2],
        "compute.wg" => OKABE_ITO[3],
        "comm.TP" => OKABE_ITO[1],
        "comm.DP" => OKABE_ITO[7],
        "comm.EP" => OKABE_ITO[3],
        "comm.DP_EP" => OKABE_ITO[4],
        "comm.PP" => OKABE_ITO[6],
        "comm.CP" => OKABE_ITO[2],
        "bubble" | "other" => GREY,
        "host_bound" => HOST,
        _ => OKABE_ITO[1 + index % 7],
    }
}

/// `#rrggbb` for CSS.
pub fn css(rgb: (u8, u8, u8)) -> String {
    format!("#{:02x}{:02x}{:02x}", rgb.0, rgb.1, rgb.2)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every part a run's breakdown can show has a colour of its own (the
    /// host-bound part once took compute's blue by its position).
    #[test]
    fn breakdown_parts_have_distinct_colours() {
        let keys = [
            "compute",
            "comm.TP",
            "comm.DP",
            "comm.EP",
            "comm.DP_EP",
            "comm.PP",
            "comm.CP",
            "bubble",
            "host_bound",
        ];
        for (i, a) in keys.iter().enumerate() {
            for (j, b) in keys.iter().enumerate().skip(i + 1) {
                assert_ne!(colour_for(a, i), colour_for(b, j), "{a} and {b}");
            }
        }
    }
}
