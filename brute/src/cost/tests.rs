//! The arithmetic of costs, prices and spends.

use super::*;

#[test]
fn costs_show_rounded_half_up_to_four_decimals() {
    assert_eq!(Cost::from_picos(123_450_000).to_string(), "$0.0001");
    assert_eq!(Cost::from_micros(50).to_string(), "$0.0001");
    assert_eq!(Cost::from_micros(49).to_string(), "$0.0000");
    assert_eq!(Cost::from_cents(1234).to_string(), "$12.3400");
    assert_eq!(format!("{:.2}", Cost::from_micros(12_345_678)), "$12.35");
    assert_eq!(format!("{:.0}", Cost::from_cents(250)), "$3");
    assert_eq!(format!("{:.12}", Cost::from_picos(1)), "$0.000000000001");
}

#[test]
fn amounts_parse_exactly_or_not_at_all() {
    assert_eq!("0.075".parse(), Ok(Cost::from_micros(75_000)));
    assert_eq!("$2.5".parse(), Ok(Cost::from_micros(2_500_000)));
    assert_eq!("3".parse(), Ok(Cost::from_cents(300)));
    assert_eq!(".5".parse(), Ok(Cost::from_cents(50)));
    // Twelve decimals, a picodollar, are the most a cost holds; thirteen are refused.
    assert_eq!("0.000000000001".parse(), Ok(Cost::from_picos(1)));
    assert_eq!(
        "$1.234567890123".parse(),
        Ok(Cost::from_picos(1_234_567_890_123))
    );
    // Signs are not digits, though Rust's integer parsing takes a `+`: each part is
    // checked to be digits before it is parsed.
    for bad in [
        "",
        "$",
        ".",
        "-1",
        "+1",
        "+1.5",
        "1.+5",
        "1e3",
        "0.1234567890123",
        "1,5",
        "99999999999",
    ] {
        assert!(bad.parse::<Cost>().is_err(), "{bad} parsed");
    }
}

#[test]
fn sums_of_many_small_costs_do_not_drift() {
    // A thousand calls at $0.0001 each is exactly ten cents; in f64, 0.0001 summed
    // a thousand times is not 0.1.
    let mut total = Cost::ZERO;
    for _ in 0..1000 {
        total += Cost::from_micros(100);
    }
    assert_eq!(total, Cost::from_cents(10));
}

#[test]
fn each_kind_of_token_is_charged_at_its_own_rate() {
    let price = Price::per_million(Cost::from_micros(1_000_000), Cost::from_micros(4_000_000))
        .with_cached_input(Cost::from_micros(100_000))
        .with_cache_write(Cost::from_micros(2_000_000));
    let usage = Usage::new(1_000_000, 1_000_000)
        .with_cached(500_000)
        .with_cache_write(250_000);
    // 250k uncached at $1, 500k cached at $0.10, 250k written at $2, 1M out at $4.
    assert_eq!(
        usage.cost_at(&price),
        Cost::from_micros(250_000 + 50_000 + 500_000 + 4_000_000)
    );
}

#[test]
fn dated_snapshots_find_their_model_and_nothing_else_does() {
    let prices = Prices::published();
    assert!(prices.get("claude-sonnet-4-5-20250929").is_some());
    assert!(prices.get("gpt-4o-mini-2024-07-18").is_some());
    assert_eq!(
        prices.get("gpt-4o-mini-2024-07-18"),
        prices.get("gpt-4o-mini")
    );
    assert!(prices.get("gpt-4o-audio-preview").is_none());
    assert!(prices.get("gpt-4o-2024-07").is_none());
    // A suffix of the length of a date, but not of digits, is no date.
    // Nor is a dashed date with a part too short or not of digits.
    for not_a_date in [
        "gpt-4o-mini-2024O718",
        "gpt-4o-mini-2024-07-1x",
        "gpt-4o-mini-20x4-07-18",
        "gpt-4o-mini-2024-07-1",
        "gpt-4o-mini-24-07-18",
    ] {
        assert!(prices.get(not_a_date).is_none(), "{not_a_date}");
    }
    assert!(prices.get("closure").is_none());
}

#[test]
fn a_table_without_a_model_keeps_every_other_price() {
    let prices = Prices::published().without("gpt-4o-mini");
    assert_eq!(prices.get("gpt-4o-mini"), None);
    assert_eq!(prices.get("gpt-4o-mini-2024-07-18"), None);
    assert_eq!(
        prices.get("claude-sonnet-4-5"),
        Prices::published().get("claude-sonnet-4-5")
    );
    assert!(prices.get("claude-sonnet-4-5").is_some());
}

#[test]
fn the_models_priced_are_listed_sorted() {
    let price = Prices::published()
        .get("gpt-4o-mini")
        .expect("a published price");
    let prices = Prices::new().with("b-model", price).with("a-model", price);
    assert_eq!(prices.models().collect::<Vec<_>>(), ["a-model", "b-model"]);
    let fewer = prices.without("a-model");
    assert_eq!(fewer.models().collect::<Vec<_>>(), ["b-model"]);
    let published = Prices::published();
    let published: Vec<&str> = published.models().collect();
    assert!(published.contains(&"gpt-4o-mini"), "{published:?}");
    assert!(published.is_sorted(), "{published:?}");
}

#[test]
fn every_model_from_spec_defaults_to_has_a_price() {
    for model in [
        "gpt-4o-mini",
        "claude-sonnet-4-5",
        "gemini-2.5-flash",
        "gpt-5",
    ] {
        assert!(Prices::published().get(model).is_some(), "{model}");
    }
}

#[test]
fn a_spend_has_a_cost_only_when_every_call_was_priced() {
    let mut spend = Spend::default();
    spend.add_call(Usage::new(10, 1), Some(Cost::from_micros(3)));
    assert_eq!(spend.cost(), Some(Cost::from_micros(3)));
    spend.add_call(Usage::new(5, 1), None);
    assert_eq!(spend.cost(), None);
    assert_eq!(spend.usage, Usage::new(15, 2));
}
