//! The conformance matrix's cells: a trace in named parts, the check that
//! the integrations of one nesting agree, and the documented differences
//! that check allows.

use crate::Door;

/// One cell of the matrix: its parts, by name, in the order written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cell(pub(crate) Vec<(&'static str, String)>);

impl Cell {
    fn render(&self) -> String {
        self.0.iter().map(|(_, text)| text.as_str()).collect::<Vec<_>>().join("; ")
    }

    fn part(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, text)| text.as_str())
    }

    fn without(&self, name: &str) -> Cell {
        Cell(self.0.iter().filter(|(n, _)| *n != name).cloned().collect())
    }
}

/// What a row gives for one integration.
#[derive(Debug)]
pub(crate) enum Answer {
    Cell(Cell),
    /// The row does not apply to the integration, for this reason.
    NotApplicable(&'static str),
}

/// A documented difference between integrations of one nesting: in `row`,
/// `door`'s trace differs from the others' in `part` alone, as `reason`
/// says.
pub(crate) struct Difference {
    pub(crate) row: &'static str,
    pub(crate) door: Door,
    pub(crate) part: &'static str,
    pub(crate) reason: &'static str,
}

/// The cell of one nesting's column, from its integrations' answers, and
/// how many documented differences it showed. Panics if an integration
/// differs from the others otherwise than [`Difference`]s allow, or if a
/// documented difference is gone.
pub(crate) fn column(row: &str, answers: &[(Door, Answer)], differences: &[Difference]) -> (String, usize) {
    let differs = |door: Door| differences.iter().find(|d| d.row == row && d.door == door);
    let cells = || {
        answers.iter().filter_map(|(door, answer)| match answer {
            Answer::Cell(cell) => Some((*door, cell)),
            Answer::NotApplicable(_) => None,
        })
    };
    let mut common = cells().filter(|(door, _)| differs(*door).is_none());
    let (first, want) =
        common.next().unwrap_or_else(|| panic!("{row}: no integration follows the common rule"));
    for (door, cell) in common {
        assert_eq!(
            cell,
            want,
            "{row}: the {} differs from the {} in the same nesting ({:?})",
            door.name(),
            first.name(),
            door.nesting()
        );
    }
    let mut text = want.render();
    // The documented differences, grouped by what they show and why.
    let mut groups: Vec<(Vec<&str>, &str, &str)> = Vec::new();
    let mut shown = 0;
    for (door, cell) in cells() {
        let Some(d) = differs(door) else { continue };
        shown += 1;
        assert_eq!(
            cell.without(d.part),
            want.without(d.part),
            "{row}: the {} differs from the {} in more than its {} ({:?})",
            door.name(),
            first.name(),
            d.part,
            door.nesting()
        );
        let part =
            cell.part(d.part).unwrap_or_else(|| panic!("{row}: the {} shows no {}", door.name(), d.part));
        assert_ne!(
            Some(part),
            want.part(d.part),
            "{row}: the {} no longer differs from the {} in its {}, which is documented ({}); \
             drop the difference from the table",
            door.name(),
            first.name(),
            d.part,
            d.reason
        );
        match groups.iter_mut().find(|(_, p, r)| *p == part && *r == d.reason) {
            Some((doors, _, _)) => doors.push(door.name()),
            None => groups.push((vec![door.name()], part, d.reason)),
        }
    }
    for (doors, part, reason) in groups {
        text.push_str(&format!(" — {}: {part} ({reason})", doors.join(", ")));
    }
    let mut skipped: Vec<(Vec<&str>, &str)> = Vec::new();
    for (door, answer) in answers {
        let Answer::NotApplicable(reason) = answer else { continue };
        match skipped.iter_mut().find(|(_, r)| r == reason) {
            Some((doors, _)) => doors.push(door.name()),
            None => skipped.push((vec![door.name()], reason)),
        }
    }
    for (doors, reason) in skipped {
        text.push_str(&format!(" — {}: n/a ({reason})", doors.join(", ")));
    }
    (text, shown)
}
