//! The placement rules evaluated at run time: the same `const fn`s `brute_agent!` and
//! [`Stack`](super::Stack) evaluate at compile time, checked here line by line, each
//! message in full (the compile-fail tests in `tests/ui/agent/fail` show them at the
//! user's `use` line).

use super::*;
use crate::kind::{Loops, SessionLog};

crate::kind! {
    /// A kind for these tests.
    Auth;
    /// A kind whose id has the length of `Auth`'s and differs in one byte.
    Aura;
}

const HERE: &str = module_path!();

fn layer(name: &'static str) -> Placement {
    Placement::new(name, HERE)
}

/// The messages of every rule line `index` of `stack` breaks, in order.
fn broken_at(stack: &[Placement], index: usize) -> Vec<String> {
    (0..)
        .map_while(|nth| placement_error(stack, index, nth))
        .map(|message| message.as_str().to_string())
        .collect()
}

/// What each rule line `index` of `stack` breaks is reported with, and the kind it is about.
fn said_at(stack: &[Placement], index: usize) -> Vec<(Said, &'static str)> {
    (0..)
        .map_while(|nth| broken_rule(stack, index, nth))
        .collect()
}

#[test]
fn a_layer_holds_four_kinds_and_eight_rules() {
    let four = layer("Four")
        .provides::<Auth>()
        .provides::<Auth>()
        .provides::<Auth>()
        .provides::<Aura>();
    assert!(provides(&four, Aura::INFO.id));
    let eight = (0..8).fold(layer("Eight"), |p, _| p.unique());
    assert_eq!(eight.rules.iter().flatten().count(), 8);
    assert_eq!(four.name(), "Four");
}

#[test]
#[should_panic(expected = "a layer can provide at most 4 kinds")]
fn a_fifth_kind_is_refused_with_a_message() {
    let _ = (0..5).fold(layer("Five"), |p, _| p.provides::<Auth>());
}

#[test]
#[should_panic(expected = "a layer can declare at most 8 placement rules")]
fn a_ninth_rule_is_refused_with_a_message() {
    let _ = (0..9).fold(layer("Nine"), |p, _| p.inside::<Auth>());
}

#[test]
fn kinds_are_told_apart_by_every_byte_of_their_id() {
    assert_eq!(Auth::INFO.id.len(), Aura::INFO.id.len());
    let gate = layer("Gate").provides::<Auth>();
    assert!(provides(&gate, Auth::INFO.id));
    assert!(!provides(&gate, Aura::INFO.id));
    assert!(!provides(&gate, "Auth"));
    assert!(!provides(&layer("Empty"), Auth::INFO.id));
    // A rule about `Aura` is not met by a layer providing `Auth`.
    let stack = [gate, layer("Guard").inside::<Aura>()];
    assert_eq!(broken_at(&stack, 1).len(), 1);
}

#[test]
fn inside_is_met_by_a_provider_anywhere_further_out_only() {
    let guard = layer("Guard").inside::<Auth>();
    let gate = layer("Gate").provides::<Auth>();
    let plain = layer("Plain");
    assert_eq!(
        broken_at(&[guard], 0),
        [
            "`Guard` must sit inside a layer that provides `Auth`, but no `use` above it provides `Auth` (rule `inside = Auth`, declared on `Guard`). Move `use Guard` below such a layer."
        ]
    );
    assert!(broken_at(&[gate, guard], 1).is_empty());
    assert!(broken_at(&[gate, plain, plain, guard], 3).is_empty());
    assert_eq!(broken_at(&[guard, gate], 0).len(), 1);
    // Its own provision does not count: it is not further out.
    assert_eq!(broken_at(&[guard.provides::<Auth>()], 0).len(), 1);
}

#[test]
fn outside_is_broken_by_a_provider_further_out_only() {
    let guard = layer("Guard").outside::<Auth>();
    let gate = layer("Gate").provides::<Auth>();
    let plain = layer("Plain");
    assert_eq!(
        broken_at(&[gate, plain, guard], 2),
        [
            "`Guard` must sit outside every layer that provides `Auth`, but a `use` above it provides `Auth` (rule `outside = Auth`, declared on `Guard`). Move `use Guard` above that layer."
        ]
    );
    assert!(broken_at(&[guard, gate], 0).is_empty());
    assert!(broken_at(&[guard.provides::<Auth>()], 0).is_empty());
}

#[test]
fn requires_inner_is_met_by_a_provider_anywhere_further_in_only() {
    let guard = layer("Guard").requires_inner::<Auth>();
    let gate = layer("Gate").provides::<Auth>();
    let plain = layer("Plain");
    assert_eq!(
        broken_at(&[guard], 0),
        [
            "`Guard` needs a layer that provides `Auth` further in, but no `use` below it provides `Auth` (rule `requires_inner = Auth`, declared on `Guard`). Add one between `use Guard` and `run`."
        ]
    );
    assert!(broken_at(&[guard, plain, plain, gate], 0).is_empty());
    assert_eq!(broken_at(&[plain, gate, guard, plain], 2).len(), 1);
    assert_eq!(broken_at(&[guard.provides::<Auth>()], 0).len(), 1);
}

/// A missing provider further in is blamed on a misplaced provider further out (that
/// layer is the one to move, and its own error says so), not on a well placed one.
#[test]
fn requires_inner_is_not_reported_while_the_provider_further_out_is_misplaced() {
    let guard = layer("Guard").requires_inner::<Auth>();
    let misplaced = layer("Gate").provides::<Auth>().inside::<Aura>();
    let stack = [misplaced, guard];
    assert_eq!(broken_at(&stack, 0).len(), 1);
    assert!(broken_at(&stack, 1).is_empty());
    assert!(first_error(&stack).is_some_and(|m| m.as_str().starts_with("`Gate` must sit inside")));
    // Placed well, it is not blamed: the rule is broken where it is declared.
    let top = layer("Top").provides::<Aura>();
    let stack = [top, misplaced, guard];
    assert!(broken_at(&stack, 1).is_empty());
    assert_eq!(broken_at(&stack, 2).len(), 1);
    // A misplaced layer that provides something else is not blamed either.
    let other = layer("Other").provides::<Aura>().inside::<Auth>();
    assert_eq!(broken_at(&[other, guard], 1).len(), 1);
}

#[test]
fn forbids_inner_is_broken_by_a_provider_further_in_only() {
    let guard = layer("Guard").forbids_inner::<Auth>();
    let gate = layer("Gate").provides::<Auth>();
    let plain = layer("Plain");
    assert_eq!(
        broken_at(&[guard, plain, gate], 0),
        [
            "`Guard` must not have a layer that provides `Auth` further in, but a `use` below it provides `Auth` (rule `forbids_inner = Auth`, declared on `Guard`). Move `use Guard` below that layer."
        ]
    );
    assert!(broken_at(&[gate, guard], 1).is_empty());
    assert!(broken_at(&[guard.provides::<Auth>()], 0).is_empty());
}

#[test]
fn unique_is_broken_by_the_same_layer_further_out_only() {
    let once = layer("Once").unique();
    let plain = layer("Plain");
    assert_eq!(
        broken_at(&[once, plain, once], 2),
        [
            "`Once` may appear only once in a stack, and this is a second `use Once` (rule `unique`, declared on `Once`). Remove one of them."
        ]
    );
    assert!(broken_at(&[once, plain, once], 0).is_empty());
    // The same name from another module, or another name, is another layer.
    let elsewhere = Placement::new("Once", "elsewhere").unique();
    assert!(broken_at(&[elsewhere, once], 1).is_empty());
    // A name of the same length, one byte apart.
    let twice = layer("Onse").unique();
    assert!(broken_at(&[twice, once], 1).is_empty());
    assert_eq!(
        said_at(&[once, once], 1),
        [(Said::Unique, crate::stack::placement::SAME_LAYER)]
    );
}

#[test]
fn a_model_is_never_a_layer() {
    let model = Placement::model("gpt");
    assert_eq!(broken_at(&[model], 0), [MODEL_AS_LAYER]);
    assert_eq!(
        said_at(&[layer("Plain"), model], 1),
        [(Said::AModel, SAME_LAYER)]
    );
}

/// A kind's rules bind every layer that provides it, with the kind's own messages; a
/// kind's `unique` rule is about the kind, not the layer.
#[test]
fn a_kinds_rules_bind_its_providers() {
    let looping = layer("Looping").provides::<Loops>();
    let log = layer("Log").provides::<SessionLog>();
    assert_eq!(
        said_at(&[looping, log], 1),
        [(Said::SessionLogOutsideLoops, Loops::INFO.id)]
    );
    assert!(
        broken_at(&[looping, log], 1)[0]
            .starts_with("a session log must sit outside every loop layer")
    );
    assert!(said_at(&[log, looping], 0).is_empty());
    let other_loop = layer("OtherLoop").provides::<Loops>();
    assert_eq!(
        said_at(&[looping, other_loop], 1),
        [(Said::LoopsDoNotNest, Loops::INFO.id)]
    );
    assert_eq!(
        said_at(&[log, layer("OtherLog").provides::<SessionLog>()], 1),
        [(Said::OneSessionLog, SessionLog::INFO.id)]
    );
}

/// Every broken rule of a line is counted, the layer's own first, then its kinds' in
/// the order they were provided; `first_error` is the first broken line's first.
#[test]
fn every_broken_rule_of_a_line_is_reported_in_order() {
    let looping = layer("Looping").provides::<Loops>();
    let busy = layer("Busy")
        .inside::<Auth>()
        .unique()
        .requires_inner::<Aura>()
        .provides::<Auth>()
        .provides::<SessionLog>()
        .provides::<Loops>();
    let stack = [looping, busy];
    assert_eq!(
        said_at(&stack, 1),
        [
            (Said::Inside, Auth::INFO.id),
            (Said::RequiresInner, Aura::INFO.id),
            (Said::SessionLogOutsideLoops, Loops::INFO.id),
            (Said::LoopsDoNotNest, Loops::INFO.id),
        ]
    );
    assert_eq!(broken_at(&stack, 1).len(), 4);
    let guard = layer("Guard").inside::<Aura>();
    let stack = [
        layer("Plain"),
        guard,
        layer("Other").requires_inner::<Auth>(),
    ];
    assert_eq!(
        first_error(&stack).map(|m| m.as_str().to_string()),
        broken_at(&stack, 1).first().cloned()
    );
    assert!(first_error(&[looping, layer("Plain")]).is_none());
}

#[test]
fn a_message_is_cut_at_its_capacity_on_a_character_boundary() {
    assert_eq!(
        Message::new().push("ab").push("").push("cd").as_str(),
        "abcd"
    );
    let long = "a".repeat(MESSAGE_CAPACITY + 60);
    let cut = Message::new().push(&long);
    assert_eq!(cut.as_str(), &long[..MESSAGE_CAPACITY]);
    let full = Message::new()
        .push(&"a".repeat(MESSAGE_CAPACITY - 1))
        .push("é and more");
    assert_eq!(full.as_str(), "a".repeat(MESSAGE_CAPACITY - 1));
    let exact = Message::new()
        .push(&"b".repeat(MESSAGE_CAPACITY - 2))
        .push("é");
    assert!(exact.as_str().ends_with("bé"), "{exact:?}");
    assert_eq!(format!("{exact:?}"), exact.as_str());
}
