//! The hints state the reduced results (`CallHints::reduced_results`)
//! exactly when every DDP-eligible result item gets a Write chunk: each
//! such item then counts as its length word, over every branch.

use rpcrdma_xdrgen::{generate, Options};

/// The generated hint chain of procedure `F`, from `types` and a program
/// whose procedure `F` returns `r`.
fn hints(types: &str) -> String {
    let src = format!("{types}\nprogram P {{ version V {{ r F(void) = 1; }} = 1; }} = 1;");
    let code = generate(&src, "p.x", &Options::default()).unwrap();
    let at = code.find("pub fn hints_f(").expect("hints_f generated");
    let line = code[at..].lines().nth(1).unwrap().trim().to_string();
    line
}

#[test]
fn one_chunked_item_leaves_its_length_word() {
    let h = hints("struct r { unsigned int n; opaque d<>; /* @ddp(4096) */ };");
    assert!(
        h.ends_with(".ddp_result(4096).max_results(4104).reduced_results(8)"),
        "{h}"
    );
}

#[test]
fn every_branch_counts_an_arm_without_an_item_whole() {
    let h = hints(
        "union r switch (int s) { case 0: opaque d<>; /* @ddp(4096) */ default: opaque e<100>; };",
    );
    // The arm without a DDP item is the largest reduced one (E1).
    assert!(
        h.ends_with(".max_results(4104).reduced_results(108)"),
        "{h}"
    );
}

#[test]
fn no_reduced_results_where_the_chunks_stop() {
    // An item inside a variable-length array gets no Write chunk.
    let h = hints("struct e { opaque d<>; /* @ddp(64) */ };\nstruct r { opaque a<>; /* @ddp(4096) */ e list<4>; };");
    assert!(h.contains(".ddp_result(4096)"), "{h}");
    assert!(!h.contains("reduced_results"), "{h}");
    // An item nothing bounds stops the chunks too, and those after it.
    let h = hints("struct r { opaque a<>; /* @ddp(4096) */ opaque b<>; /* @ddp */ };");
    assert!(!h.contains("reduced_results"), "{h}");
    // No DDP-eligible item: nothing to reduce.
    let h = hints("struct r { opaque a<100>; };");
    assert!(h.ends_with(".max_results(104)"), "{h}");
}
