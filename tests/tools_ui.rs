//! Compile errors of `#[tool]`: each case's `.stderr` shows the message at the span.

#[test]
fn tool_attribute_errors() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/tools_ui/*.rs");
}
