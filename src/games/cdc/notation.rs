//! A position's key, its notation, its drawing and its action names, to and from the state
//! (formats in the module docs of [`super`]).

use super::*;

impl Rules {
    /// (board nibbles, aux) of the key; see the module docs.
    pub(super) fn key_parts<const N: usize, const HB: usize>(
        &self,
        s: &CdcState<N, HB>,
    ) -> (u128, u64) {
        let mut board = 0u128;
        for (sq, &c) in s.board.iter().enumerate() {
            board |= (c as u128) << (4 * sq);
        }
        let side = match s.colour_to_move() {
            None => 0u64,
            Some(Colour::Red) => 1,
            Some(Colour::Black) => 2,
        };
        let pending = s.pending.map_or(0, |p| p as u64 + 1);
        let mut radix = 0u64;
        for (ck, &h) in s.hidden.iter().enumerate() {
            radix += h as u64 * self.place[ck] as u64;
        }
        (board, side | pending << 2 | radix << 8)
    }

    /// Builds a state with fresh counters from its parts, checking they are well formed.
    pub(super) fn build<const N: usize, const HB: usize>(
        &self,
        board: [u8; N],
        hidden: [u8; CKINDS],
        side: Option<Colour>,
        pending: Option<usize>,
    ) -> Result<CdcState<N, HB>, String> {
        let mut on_board = [0u32; CKINDS];
        for &c in &board {
            if c >= PIECE0 {
                on_board[(c - PIECE0) as usize] += 1;
            }
        }
        for ck in 0..CKINDS {
            let m = self.material[ck % KINDS] as u32;
            if on_board[ck] + hidden[ck] as u32 > m {
                return Err(format!(
                    "{} pieces `{}` on the board and face down; the material has {m}",
                    on_board[ck] + hidden[ck] as u32,
                    ck_char(ck as u8)
                ));
            }
        }
        let down = board.iter().filter(|&&c| c == DOWN).count() as u32;
        let hidden_total: u32 = hidden.iter().map(|&h| h as u32).sum();
        if down != hidden_total {
            return Err(format!(
                "{down} face-down squares but a face-down multiset of {hidden_total} pieces"
            ));
        }
        let start = down as usize == N && hidden_total as usize == 2 * self.pieces_per_side();
        match side {
            None if !start => {
                return Err("no colour to move (`-`) is only the start position".into());
            }
            Some(_) if start => {
                return Err("the start position has no colour to move yet (`-`)".into());
            }
            _ => {}
        }
        if let Some(p) = pending
            && board.get(p) != Some(&DOWN)
        {
            return Err(format!(
                "a flip is pending on {}, which is not face down",
                self.square_name(p)
            ));
        }
        let (seat, p0) = match side {
            None => (Player::P0, None),
            Some(c) => {
                let p0 = if REBUILT_SEAT == Player::P0 {
                    c
                } else {
                    c.other()
                };
                (REBUILT_SEAT, Some(p0))
            }
        };
        let mut s = CdcState {
            board,
            hidden,
            history: [0; HB],
            quiet: 0,
            seat,
            p0,
            pending: pending.map(|p| p as u8),
            result: None,
        };
        if pending.is_none() {
            self.settle(&mut s, Change::Rebuilt);
        }
        Ok(s)
    }

    /// The face-down counts of a face-down multiset's number (the key's mixed radix).
    #[inline]
    pub(super) fn hidden_of(&self, radix: u64) -> [u8; CKINDS] {
        let mut hidden = [0u8; CKINDS];
        let mut r = radix;
        for (ck, h) in hidden.iter_mut().enumerate() {
            let m = self.material[ck % KINDS] as u64;
            if m > 0 {
                *h = (r % (m + 1)) as u8;
                r /= m + 1;
            }
        }
        hidden
    }

    pub(super) fn pieces_per_side(&self) -> usize {
        self.material.iter().map(|&m| m as usize).sum()
    }

    pub(super) fn decode_key_parts<const N: usize, const HB: usize>(
        &self,
        board_bits: u128,
        aux: u64,
    ) -> Result<CdcState<N, HB>, String> {
        if N < 32 && board_bits >> (4 * N) != 0 {
            return Err("board bits beyond the last square".into());
        }
        let mut board = [EMPTY; N];
        for (sq, b) in board.iter_mut().enumerate() {
            *b = ((board_bits >> (4 * sq)) & 15) as u8;
        }
        let side = match aux & 3 {
            0 => None,
            1 => Some(Colour::Red),
            2 => Some(Colour::Black),
            _ => return Err("colour-to-move field 3 (allowed: 0 none, 1 red, 2 black)".into()),
        };
        let pending = match (aux >> 2) & 63 {
            0 => None,
            p if (p as usize) <= N => Some(p as usize - 1),
            p => return Err(format!("pending square field {p} (allowed: 0..={N})")),
        };
        let radix = aux >> 8;
        if radix >= self.radix_total as u64 {
            return Err(format!(
                "face-down multiset number {radix} (allowed: 0..{})",
                self.radix_total
            ));
        }
        let hidden = self.hidden_of(radix);
        self.build(board, hidden, side, pending)
    }

    pub(super) fn notation<const N: usize, const HB: usize>(&self, s: &CdcState<N, HB>) -> String {
        let mut t = String::new();
        for (sq, &c) in s.board.iter().enumerate() {
            if sq > 0 && sq % self.ranks == 0 {
                t.push('/');
            }
            t.push(match c {
                EMPTY => '.',
                DOWN => 'x',
                p => ck_char(p - PIECE0),
            });
        }
        t.push(' ');
        t.push(match s.colour_to_move() {
            None => '-',
            Some(Colour::Red) => 'r',
            Some(Colour::Black) => 'b',
        });
        t.push(' ');
        let mut any = false;
        for (ck, &h) in s.hidden.iter().enumerate() {
            for _ in 0..h {
                t.push(ck_char(ck as u8));
                any = true;
            }
        }
        if !any {
            t.push('-');
        }
        if let Some(p) = s.pending {
            let _ = write!(t, " flip={}", self.square_name(p as usize));
        }
        t
    }

    pub(super) fn parse_notation<const N: usize, const HB: usize>(
        &self,
        text: &str,
    ) -> Result<CdcState<N, HB>, String> {
        let parts: Vec<&str> = text.split_whitespace().collect();
        if !(3..=4).contains(&parts.len()) {
            return Err(
                "expected `<board> <r|b|-> <face-down pieces or -> [flip=<square>]`".into(),
            );
        }
        let files: Vec<&str> = parts[0].split('/').collect();
        if files.len() != self.files || files.iter().any(|f| f.chars().count() != self.ranks) {
            return Err(format!(
                "the board `{}` must be {} files of {} squares separated by `/`",
                parts[0], self.files, self.ranks
            ));
        }
        let mut board = [EMPTY; N];
        for (sq, ch) in files.iter().flat_map(|f| f.chars()).enumerate() {
            board[sq] = match ch {
                '.' => EMPTY,
                'x' => DOWN,
                c => match char_ck(c) {
                    Some(ck) => PIECE0 + ck,
                    None => {
                        return Err(format!(
                            "square {} holds `{c}`; allowed: . (empty), x (face down), \
                             KGMRNCP, kgmrncp",
                            self.square_name(sq)
                        ));
                    }
                },
            };
        }
        let side = match parts[1] {
            "-" => None,
            "r" => Some(Colour::Red),
            "b" => Some(Colour::Black),
            o => return Err(format!("colour to move `{o}`; allowed: r, b, -")),
        };
        let mut hidden = [0u8; CKINDS];
        if parts[2] != "-" {
            for c in parts[2].chars() {
                let Some(ck) = char_ck(c) else {
                    return Err(format!(
                        "face-down piece `{c}`; allowed: KGMRNCP, kgmrncp, or `-` for none"
                    ));
                };
                hidden[ck as usize] = hidden[ck as usize].saturating_add(1);
            }
        }
        let pending = match parts.get(3) {
            None => None,
            Some(p) => {
                let sq = p
                    .strip_prefix("flip=")
                    .and_then(|q| self.parse_square(q))
                    .ok_or_else(|| {
                        format!(
                            "`{p}` is not a pending flip; expected flip=<square>, a1..{}",
                            self.square_name(N - 1)
                        )
                    })?;
                Some(sq)
            }
        };
        self.build(board, hidden, side, pending)
    }

    pub(super) fn render<const N: usize, const HB: usize>(&self, s: &CdcState<N, HB>) -> String {
        let mut t = String::new();
        let files: String = (0..self.files)
            .map(|f| format!(" {}", (b'a' + f as u8) as char))
            .collect();
        let _ = writeln!(t, "  {files}");
        for rank in (0..self.ranks).rev() {
            let _ = write!(t, "{:>2}", rank + 1);
            for f in 0..self.files {
                let c = match s.board[f * self.ranks + rank] {
                    EMPTY => '.',
                    DOWN => 'x',
                    p => ck_char(p - PIECE0),
                };
                let _ = write!(t, " {c}");
            }
            t.push('\n');
        }
        let who = match (s.colour_to_move(), s.seat) {
            (None, p) => format!("{p:?} to move, no colours yet"),
            (Some(c), p) => format!("{c:?} ({p:?}) to move"),
        };
        let state = match (s.result, s.pending) {
            (Some(GameResult::Draw), _) => "game over: draw".to_string(),
            (Some(GameResult::Win(p)), _) => format!("game over: {p:?} wins"),
            (None, Some(sq)) => format!("{who}, flipping {}", self.square_name(sq as usize)),
            (None, None) => who,
        };
        let mut down = String::new();
        for (ck, &h) in s.hidden.iter().enumerate() {
            for _ in 0..h {
                down.push(ck_char(ck as u8));
            }
        }
        if down.is_empty() {
            down.push('-');
        }
        let _ = write!(
            t,
            "{state}; face down: {down}; no-progress plies: {}",
            s.quiet
        );
        t
    }

    pub(super) fn action_name<const N: usize, const HB: usize>(
        &self,
        s: &CdcState<N, HB>,
        a: Action,
    ) -> String {
        if (a as usize) < N {
            return format!("flip {}", self.square_name(a as usize));
        }
        match self.decode_move(a) {
            Some((src, dst)) => {
                let sep = if s.board[dst] >= PIECE0 { 'x' } else { '-' };
                format!("{}{sep}{}", self.square_name(src), self.square_name(dst))
            }
            None => format!("action {a} (out of range)"),
        }
    }
}
