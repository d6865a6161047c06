//! The rules of both boards on [`Rules`]: geometry, move generation, the draw rules and
//! their history, and the state transitions (the module docs of [`super`] state the rules).

use super::*;

impl Rules {
    pub(super) fn new(
        layout: Layout,
        material: [u8; KINDS],
        no_progress: u16,
        rep: Option<u8>,
    ) -> Rules {
        let (files, ranks) = match layout {
            Layout::TwoByFour => (2, 4),
            Layout::FourByEight => (4, 8),
        };
        let mut place = [0u32; CKINDS];
        let mut total = 1u32;
        for (ck, p) in place.iter_mut().enumerate() {
            let m = material[ck % KINDS] as u32;
            if m > 0 {
                *p = total;
                total *= m + 1;
            }
        }
        let n = files * ranks;
        Rules {
            layout,
            files,
            ranks,
            material,
            no_progress,
            repetition: rep,
            place,
            radix_total: total,
            hist_bits: (usize::BITS - (n - 1).leading_zeros()) as usize + 2,
        }
    }

    /// Parses the `no_progress` and `repetition` options and rejects unknown ones.
    pub(super) fn parse_options(spec: &mut VariantSpec) -> Result<(u16, Option<u8>), GameError> {
        let rep = match spec.take("repetition") {
            None => Some(DEFAULT_REPETITION),
            Some(v) if v.eq_ignore_ascii_case("off") => None,
            Some(v) => match v.parse::<u8>() {
                Ok(n) if (2..=9).contains(&n) => Some(n),
                _ => {
                    return Err(spec.error(format!(
                        "option repetition={v} is not allowed; allowed: an integer 2..=9 or off"
                    )));
                }
            },
        };
        let max = if rep.is_some() {
            MAX_HISTORY as u32
        } else {
            MAX_NO_PROGRESS
        };
        let np = match spec.take("no_progress") {
            None => DEFAULT_NO_PROGRESS,
            Some(v) => match v.parse::<u32>() {
                Ok(n) if (1..=max).contains(&n) => n,
                _ => {
                    let why = if rep.is_some() {
                        format!(
                            "an integer 1..={max} while the repetition rule is on \
                             (1..={MAX_NO_PROGRESS} with repetition=off)"
                        )
                    } else {
                        format!("an integer 1..={max}")
                    };
                    return Err(spec.error(format!(
                        "option no_progress={v} is out of range; allowed: {why}"
                    )));
                }
            },
        };
        spec.finish(&["no_progress", "repetition"])?;
        Ok((np as u16, rep))
    }

    pub(super) fn options_suffix(&self) -> String {
        let mut s = String::new();
        if self.no_progress as u32 != DEFAULT_NO_PROGRESS {
            let _ = write!(s, ",no_progress={}", self.no_progress);
        }
        match self.repetition {
            None => s.push_str(",repetition=off"),
            Some(DEFAULT_REPETITION) => {}
            Some(n) => {
                let _ = write!(s, ",repetition={n}");
            }
        }
        s
    }

    #[inline]
    pub(super) fn n(&self) -> usize {
        self.files * self.ranks
    }

    pub(super) fn num_actions(&self) -> usize {
        match self.layout {
            Layout::TwoByFour => 8 + 32,
            Layout::FourByEight => 32 + 32 * 32,
        }
    }

    /// The neighbour of `sq` in direction `dir`: 0 previous file, 1 previous rank, 2 next
    /// rank, 3 next file (ascending square order; `3 - dir` is the opposite direction).
    #[inline]
    pub(super) fn step(&self, sq: usize, dir: usize) -> Option<usize> {
        if self.layout == Layout::TwoByFour {
            // The same neighbours from a table: no division in the solver's hot loop.
            let t = STEP_2X4[sq & 7][dir & 3];
            return (t != NO_SQUARE).then_some(t as usize);
        }
        let r = self.ranks;
        match dir {
            0 => sq.checked_sub(r),
            1 => (!sq.is_multiple_of(r)).then(|| sq - 1),
            2 => (sq % r != r - 1).then_some(sq + 1),
            _ => (sq + r < self.n()).then_some(sq + r),
        }
    }

    /// 2x4: the four destinations of `src`, ascending.
    pub(super) fn dests_2x4(src: usize) -> [usize; 4] {
        let mut d = [0usize; 4];
        let mut i = 0;
        for t in 0..8 {
            if t != src && (t / 4 == src / 4 || t % 4 == src % 4) {
                d[i] = t;
                i += 1;
            }
        }
        d
    }

    #[inline]
    pub(super) fn move_action(&self, src: usize, dst: usize) -> Action {
        match self.layout {
            Layout::FourByEight => (32 + 32 * src + dst) as Action,
            Layout::TwoByFour => 8 + 4 * src as Action + J_2X4[src][dst] as Action,
        }
    }

    /// `(src, dst)` of a move action, or `None` for a flip or an out-of-range action.
    pub(super) fn decode_move(&self, a: Action) -> Option<(usize, usize)> {
        let a = a as usize;
        match self.layout {
            Layout::FourByEight if (32..1056).contains(&a) => Some(((a - 32) / 32, (a - 32) % 32)),
            Layout::TwoByFour if (8..40).contains(&a) => {
                let src = (a - 8) / 4;
                Some((src, Self::dests_2x4(src)[(a - 8) % 4]))
            }
            _ => None,
        }
    }

    pub(super) fn square_name(&self, sq: usize) -> String {
        format!(
            "{}{}",
            (b'a' + (sq / self.ranks) as u8) as char,
            sq % self.ranks + 1
        )
    }

    pub(super) fn parse_square(&self, t: &str) -> Option<usize> {
        let mut ch = t.chars();
        let f = ch.next()?;
        let rank: usize = ch.as_str().parse().ok()?;
        let file = (f as u32).checked_sub('a' as u32)? as usize;
        (file < self.files && (1..=self.ranks).contains(&rank))
            .then(|| file * self.ranks + rank - 1)
    }

    /// Calls `f(src, dst)` for every legal move of colour `c` on `board`, ascending by
    /// (src, dst), until `f` returns false. Returns false if it was stopped.
    #[inline]
    pub(super) fn for_each_move(
        &self,
        board: &[u8],
        c: Colour,
        mut f: impl FnMut(usize, usize) -> bool,
    ) -> bool {
        for src in 0..board.len() {
            let Some(ck) = board[src].checked_sub(PIECE0) else {
                continue;
            };
            if ck_colour(ck) != c {
                continue;
            }
            let kind = ck_kind(ck);
            for dir in 0..4 {
                let Some(adj) = self.step(src, dir) else {
                    continue;
                };
                let t = board[adj];
                let adj_ok = t == EMPTY
                    || (kind != CANNON
                        && t >= PIECE0
                        && ck_colour(t - PIECE0) != c
                        && can_capture(kind, ck_kind(t - PIECE0)));
                let jump = if kind == CANNON {
                    self.cannon_target(board, adj, dir, c)
                } else {
                    None
                };
                // Destinations ascend: toward lower squares the jump lies beyond the
                // neighbour, toward higher squares after it.
                if dir < 2 {
                    if let Some(j) = jump
                        && !f(src, j)
                    {
                        return false;
                    }
                    if adj_ok && !f(src, adj) {
                        return false;
                    }
                } else {
                    if adj_ok && !f(src, adj) {
                        return false;
                    }
                    if let Some(j) = jump
                        && !f(src, j)
                    {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// The square a cannon of colour `c` captures on by jumping in direction `dir`, where
    /// `adj` is its neighbour that way: the first occupied square from `adj` on is the
    /// screen, and the next occupied one is the target if it is a face-up enemy.
    #[inline]
    pub(super) fn cannon_target(
        &self,
        board: &[u8],
        adj: usize,
        dir: usize,
        c: Colour,
    ) -> Option<usize> {
        let mut sq = adj;
        let mut screened = false;
        loop {
            if board[sq] != EMPTY {
                if screened {
                    let t = board[sq];
                    return (t >= PIECE0 && ck_colour(t - PIECE0) != c).then_some(sq);
                }
                screened = true;
            }
            sq = self.step(sq, dir)?;
        }
    }

    pub(super) fn legal_actions<const N: usize, const HB: usize>(
        &self,
        s: &CdcState<N, HB>,
        out: &mut Vec<Action>,
    ) {
        out.clear();
        if s.result.is_some() || s.pending.is_some() {
            return;
        }
        for (sq, &code) in s.board.iter().enumerate() {
            if code == DOWN {
                out.push(sq as Action);
            }
        }
        if let Some(c) = s.colour_to_move() {
            self.for_each_move(&s.board, c, |src, dst| {
                out.push(self.move_action(src, dst));
                true
            });
        }
    }

    pub(super) fn has_action<const N: usize, const HB: usize>(
        &self,
        s: &CdcState<N, HB>,
        c: Colour,
    ) -> bool {
        s.board.contains(&DOWN) || !self.for_each_move(&s.board, c, |_, _| false)
    }

    /// Pieces of colour `c` left, on the board or face down.
    pub(super) fn pieces_left<const N: usize, const HB: usize>(
        &self,
        s: &CdcState<N, HB>,
        c: Colour,
    ) -> u32 {
        let on_board = s
            .board
            .iter()
            .filter(|&&t| t >= PIECE0 && ck_colour(t - PIECE0) == c)
            .count() as u32;
        let lo = c.index() * KINDS;
        on_board
            + s.hidden[lo..lo + KINDS]
                .iter()
                .map(|&h| h as u32)
                .sum::<u32>()
    }

    #[inline]
    pub(super) fn hist_get<const N: usize, const HB: usize>(
        &self,
        s: &CdcState<N, HB>,
        i: usize,
    ) -> usize {
        let bit = i * self.hist_bits;
        let (byte, shift) = (bit / 8, bit % 8);
        let w = s.history[byte] as usize | (s.history[byte + 1] as usize) << 8;
        (w >> shift) & ((1 << self.hist_bits) - 1)
    }

    #[inline]
    pub(super) fn hist_set<const N: usize, const HB: usize>(
        &self,
        s: &mut CdcState<N, HB>,
        i: usize,
        v: usize,
    ) {
        let bit = i * self.hist_bits;
        let (byte, shift) = (bit / 8, bit % 8);
        let mask = ((1usize << self.hist_bits) - 1) << shift;
        let w = s.history[byte] as usize | (s.history[byte + 1] as usize) << 8;
        let w = (w & !mask) | (v << shift);
        s.history[byte] = w as u8;
        s.history[byte + 1] = (w >> 8) as u8;
    }

    /// Whether the current position of `s` (right after a plain move) occurs for the
    /// `rep`-th time in its run of plain moves.
    pub(super) fn repeated<const N: usize, const HB: usize>(
        &self,
        s: &CdcState<N, HB>,
        rep: u8,
    ) -> bool {
        let k = s.quiet as usize;
        let mut b = s.board;
        let mut count = 1;
        for i in (0..k).rev() {
            let e = self.hist_get(s, i);
            let (dst, dir) = (e >> 2, e & 3);
            let Some(src) = self.step(dst, 3 - dir) else {
                return false;
            };
            b[src] = b[dst];
            b[dst] = EMPTY;
            if (k - i).is_multiple_of(2) && b == s.board {
                count += 1;
                if count >= rep {
                    return true;
                }
            }
        }
        false
    }

    /// Sets `result` after a change, checking no-progress, repetition, then the loss of the
    /// side to move.
    pub(super) fn settle<const N: usize, const HB: usize>(
        &self,
        s: &mut CdcState<N, HB>,
        change: Change,
    ) {
        s.result = None;
        if change != Change::Rebuilt && s.quiet >= self.no_progress {
            s.result = Some(GameResult::Draw);
            return;
        }
        if change == Change::PlainMove
            && let Some(rep) = self.repetition
            && self.repeated(s, rep)
        {
            s.result = Some(GameResult::Draw);
            return;
        }
        let Some(c) = s.colour_to_move() else {
            return;
        };
        if self.pieces_left(s, c) == 0 || !self.has_action(s, c) {
            s.result = Some(GameResult::Win(s.seat.other()));
        }
    }

    pub(super) fn initial_state<const N: usize, const HB: usize>(&self) -> CdcState<N, HB> {
        let mut hidden = [0u8; CKINDS];
        for (ck, h) in hidden.iter_mut().enumerate() {
            *h = self.material[ck % KINDS];
        }
        CdcState {
            board: [DOWN; N],
            hidden,
            history: [0; HB],
            quiet: 0,
            seat: Player::P0,
            p0: None,
            pending: None,
            result: None,
        }
    }

    pub(super) fn apply<const N: usize, const HB: usize>(
        &self,
        s: &CdcState<N, HB>,
        a: Action,
    ) -> CdcState<N, HB> {
        let mut t = *s;
        if (a as usize) < N {
            t.pending = Some(a as u8);
            return t;
        }
        let Some((src, dst)) = self.decode_move(a) else {
            return t;
        };
        let captured = t.board[dst] >= PIECE0;
        t.board[dst] = t.board[src];
        t.board[src] = EMPTY;
        t.seat = t.seat.other();
        if captured {
            t.quiet = 0;
            self.settle(&mut t, Change::Progress);
        } else {
            if self.repetition.is_some() && (t.quiet as usize) < MAX_HISTORY {
                let dir = (0..4)
                    .find(|&d| self.step(src, d) == Some(dst))
                    .unwrap_or(0);
                let i = t.quiet as usize;
                self.hist_set(&mut t, i, dst << 2 | dir);
            }
            t.quiet = t.quiet.saturating_add(1);
            self.settle(&mut t, Change::PlainMove);
        }
        t
    }

    pub(super) fn chance_outcomes<const N: usize, const HB: usize>(
        &self,
        s: &CdcState<N, HB>,
        out: &mut Vec<ChanceOutcome>,
    ) {
        out.clear();
        if s.pending.is_none() || s.result.is_some() {
            return;
        }
        let total: u32 = s.hidden.iter().map(|&h| h as u32).sum();
        for (ck, &h) in s.hidden.iter().enumerate() {
            if h > 0 {
                out.push(ChanceOutcome {
                    outcome: ck as Outcome,
                    prob: h as f64 / total as f64,
                });
            }
        }
    }

    pub(super) fn apply_chance<const N: usize, const HB: usize>(
        &self,
        s: &CdcState<N, HB>,
        o: Outcome,
    ) -> CdcState<N, HB> {
        let mut t = *s;
        let (Some(sq), true) = (t.pending, (o as usize) < CKINDS) else {
            return t;
        };
        let ck = o as u8;
        t.pending = None;
        t.board[sq as usize] = PIECE0 + ck;
        t.hidden[ck as usize] = t.hidden[ck as usize].saturating_sub(1);
        if t.p0.is_none() {
            let c = ck_colour(ck);
            t.p0 = Some(if t.seat == Player::P0 { c } else { c.other() });
        }
        t.seat = t.seat.other();
        t.quiet = 0;
        self.settle(&mut t, Change::Progress);
        t
    }

    pub(super) fn level<const N: usize, const HB: usize>(s: &CdcState<N, HB>) -> u32 {
        s.board
            .iter()
            .map(|&c| match c {
                EMPTY => 0,
                DOWN => 2,
                _ => 1,
            })
            .sum()
    }

    pub(super) fn test_positions<const N: usize, const HB: usize>(&self) -> Vec<CdcState<N, HB>> {
        let start: CdcState<N, HB> = self.initial_state();
        let mut v = vec![start];
        for sq in 0..N {
            let chance = self.apply(&start, sq as Action);
            for ck in 0..CKINDS {
                if start.hidden[ck] > 0 {
                    v.push(self.apply_chance(&chance, ck as Outcome));
                }
            }
        }
        v
    }
}
