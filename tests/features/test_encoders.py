"""FeatureEncoder: vocabulary with an unknown index, log-standardisation, schema checks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoutless.fast_paths import FastPaths, using
from scoutless.features import schema
from scoutless.features.encoded import InspectedFeatures
from scoutless.features.encoders import FeatureEncoder
from scoutless.features.normalise import category_text
from scoutless.features.schema import SchemaError
from scoutless.features.spec import FeatureSpec

SPECS = [
    FeatureSpec("user", "categorical"),
    FeatureSpec("queue", "categorical"),
    FeatureSpec("cores", "numerical"),
    FeatureSpec("events", "numerical"),
]


def _frame(n: int = 200, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "user": rng.choice(["alice", "bob", "carol"], n).astype(object),
            "queue": rng.choice([1, 2, 3], n),  # integer categories, as workqueue_id
            "cores": rng.choice([1.0, 8.0], n),
            "events": np.exp(rng.normal(8, 2, n)),
            "target": rng.integers(0, 3, n),  # extra column: allowed in frames
        }
    )


@pytest.fixture
def fitted() -> FeatureEncoder:
    return FeatureEncoder(SPECS).fit(_frame())


def test_vocabulary_reserves_index_zero_for_unknown_and_missing(fitted):
    rows = [
        {"user": "alice", "queue": 2, "cores": 8, "events": 10.0},
        {"user": "mallory", "queue": 99, "cores": 1, "events": None},  # never seen
        {"user": None, "queue": None, "cores": None, "events": 5},
    ]
    codes = fitted.transform(rows).codes
    assert codes[0, 0] == fitted.vocabulary_["user"].index("alice") + 1
    assert codes[0, 1] == fitted.vocabulary_["queue"].index("2") + 1
    assert (codes[1] == 0).all() and (codes[2] == 0).all()
    assert fitted.cardinalities == [4, 4]


def test_rare_categories_map_to_unknown():
    frame = _frame()
    frame.loc[0, "user"] = "once"
    enc = FeatureEncoder(SPECS, min_count=2).fit(frame)
    assert "once" not in enc.vocabulary_["user"]
    assert FeatureEncoder(SPECS, min_count=1).fit(frame).vocabulary_["user"].count("once") == 1


def test_numericals_are_log_standardised_with_nan_for_missing(fitted):
    frame = _frame()
    numeric = fitted.transform(frame).numeric
    assert numeric.dtype == np.float32
    np.testing.assert_allclose(numeric.mean(axis=0), 0, atol=1e-5)
    np.testing.assert_allclose(numeric.std(axis=0), 1, atol=1e-4)
    one = fitted.transform({"user": "bob", "queue": 1, "cores": np.nan, "events": 100.0})
    assert np.isnan(one.numeric[0, 0])
    expected = (np.log1p(100.0) - fitted.mean_["events"]) / fitted.scale_["events"]
    assert one.numeric[0, 1] == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("n", [5, 300])  # the few-row list path and the vectorised path
def test_frame_and_records_encode_identically(fitted, n):
    frame = _frame(n, seed=1)
    frame.loc[frame.index[::7], "user"] = "newcomer"
    frame.loc[frame.index[::5], "events"] = np.nan
    by_frame = fitted.transform(frame)
    records = frame.drop(columns="target").to_dict("records")
    by_records = fitted.transform(records)
    np.testing.assert_array_equal(by_frame.codes, by_records.codes)
    np.testing.assert_array_equal(by_frame.numeric, by_records.numeric)


def test_missing_unexpected_and_wrong_types_are_named(fitted):
    with pytest.raises(SchemaError) as err:
        fitted.validate([{"user": "bob", "queue": 1, "cores": 1, "evnts": 3}])
    assert err.value.missing == ["events"] and err.value.unexpected == ["evnts"]
    assert "events" in str(err.value)
    with pytest.raises(SchemaError) as err:
        fitted.transform([{"user": ["x"], "queue": 1, "cores": "many", "events": 3}])
    assert err.value.wrong_type == {"user": "categorical", "cores": "numerical"}
    with pytest.raises(SchemaError) as err:
        fitted.transform(_frame().drop(columns="cores"))
    assert err.value.missing == ["cores"]
    assert isinstance(err.value, ValueError)


def test_validate_returns_typed_frame_in_feature_order(fitted):
    typed = fitted.validate([{"events": "12", "cores": 8, "queue": 3.0, "user": ""}])
    assert list(typed.columns) == ["user", "queue", "cores", "events"]
    assert typed.loc[0, "queue"] == "3" and typed.loc[0, "user"] is None
    assert typed.loc[0, "events"] == 12.0 and typed["cores"].dtype == float


def test_unknown_categories_per_row(fitted):
    rows = [
        {"user": "alice", "queue": 1, "cores": 1, "events": 1},
        {"user": "zed", "queue": 7, "cores": 1, "events": 1},
        {"user": None, "queue": 1, "cores": 1, "events": 1},
    ]
    assert fitted.unknown_categories(rows) == [{}, {"user": "zed", "queue": "7"}, {}]


def test_round_trip_through_dict(fitted):
    clone = FeatureEncoder.from_dict(fitted.to_dict())
    frame = _frame(100, seed=3)
    a, b = fitted.transform(frame), clone.transform(frame)
    np.testing.assert_array_equal(a.codes, b.codes)
    np.testing.assert_array_equal(a.numeric, b.numeric)


def test_unfitted_encoder_refuses_to_transform():
    with pytest.raises(RuntimeError, match="not fitted"):
        FeatureEncoder(SPECS).transform(_frame())


def test_category_text_normalises_integral_floats():
    assert category_text(12.0) == "12" and category_text(np.int64(3)) == "3"
    assert category_text(float("nan")) is None and category_text("") is None
    assert category_text(1.5) == "1.5"


@pytest.mark.parametrize("dtype", [object, "string", "str"])
def test_text_columns_of_every_string_dtype_encode_as_posted_records(fitted, dtype):
    """A text column (object, Python- or Arrow-backed string) gives the same codes as the
    same values posted one record at a time: one normaliser, missing and empty text alike."""
    users = ["alice", None, "", "bob", "zed", "carol"]
    frame = pd.DataFrame(
        {"user": pd.Series(users, dtype=dtype), "queue": [1, 2, 3, 1, 2, 3],
         "cores": 1.0, "events": 5.0}
    )  # fmt: skip
    records = frame.astype(object).where(frame.notna(), None).to_dict("records")
    np.testing.assert_array_equal(fitted.transform(frame).codes, fitted.transform(records).codes)
    codes = fitted.transform(frame).codes[:, 0]
    assert codes[1] == codes[2] == codes[4] == 0  # missing, empty, unseen: the unknown index


def test_object_column_with_integral_floats_matches_the_normaliser(fitted):
    """An object column holding 2.0 (a NULL-widened integer) encodes like the integer 2."""
    base = {"user": "alice", "cores": 1.0, "events": 5.0}
    mixed = pd.DataFrame([{**base, "queue": 2}, {**base, "queue": None}])
    mixed["queue"] = pd.Series([2.0, None], dtype=object)
    mixed["user"] = mixed["user"].astype(object)
    as_int = fitted.transform([{**base, "queue": 2}]).codes[0]
    np.testing.assert_array_equal(fitted.transform(mixed).codes[0], as_int)


_NUMBER_VALUES = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(2**70), 2**70),
    st.booleans(),
    st.sampled_from(["12.5", "", "  ", "many", np.float32(2.5), np.int64(7), pd.NA]),
)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=st.lists(st.tuples(_NUMBER_VALUES, _NUMBER_VALUES), min_size=1, max_size=4))
def test_few_rows_numbers_in_one_pass_equal_the_checked_column_path(fitted, rows):
    """Plain JSON numbers and None take one array for all columns; anything else the
    per-column path: both give the same floats, or the same schema error (the fitted
    encoder is only read)."""
    records = [{"user": "bob", "queue": 1, "cores": c, "events": e} for c, e in rows]
    columns = {"cores": [c for c, _ in rows], "events": [e for _, e in rows]}
    checked = [FeatureEncoder._numerical_column(columns[n]) for n in ("cores", "events")]
    fast = schema._plain_numbers(columns, ["cores", "events"], len(rows))
    if fast is not None:
        for got, want in zip(fast.values(), checked, strict=True):
            np.testing.assert_array_equal(got, want)
    if any(c is None for c in checked):
        with pytest.raises(SchemaError, match="wrong value types"):
            fitted.transform(records)
    else:
        expected = np.column_stack(checked)
        raw = (np.sign(expected) * np.log1p(np.abs(expected)) - fitted._mean) / fitted._scale
        np.testing.assert_array_equal(fitted.transform(records).numeric, raw.astype(np.float32))


def test_an_encoder_without_numericals_types_a_few_rows():
    encoder = FeatureEncoder([FeatureSpec("user", "categorical")], min_count=1)
    encoded = encoder.fit(pd.DataFrame({"user": ["a", "b", "a"]})).transform({"user": "b"})
    assert encoded.numeric.shape == (1, 0) and encoded.codes.tolist() == [[2]]


def test_stacked_requests_read_as_one_inspection_of_all_their_rows(fitted):
    frame = _frame(9, seed=3).drop(columns="target")
    frame.loc[2, "user"] = "mallory"  # an unknown category
    records = frame.to_dict(orient="records")
    parts = [fitted.inspect(records[lo:hi]) for lo, hi in ((0, 1), (1, 5), (5, 9))]
    stacked, whole = InspectedFeatures.stack(parts), fitted.inspect(records)
    assert np.array_equal(stacked.encoded.codes, whole.encoded.codes)
    assert np.array_equal(stacked.encoded.numeric, whole.encoded.numeric, equal_nan=True)
    # the typed values and unknowns, built when first read (a group's decisions read few)
    assert stacked.unknown == whole.unknown and stacked.unknown[2] == {"user": "mallory"}
    assert stacked.categories == whole.categories
    assert stacked.numbers.keys() == whole.numbers.keys()
    for name, values in whole.numbers.items():
        assert np.array_equal(stacked.numbers[name], values, equal_nan=True)
    assert stacked.rows(["user", "cores"]) == whole.rows(["user", "cores"])
    assert len(stacked) == len(whole) == 9


@pytest.mark.parametrize("n", [0, 1, 5])
def test_a_few_rows_codes_in_one_conversion_equal_the_columns_and_their_layout(
    fitted, n
):
    frame = _frame(max(n, 1), seed=2).head(n)
    frame.loc[frame.index[::2], "user"] = "newcomer"
    records = frame.drop(columns="target").to_dict("records")
    few = fitted.transform(records).codes
    with using(FastPaths(rows=-1)):  # every size by the column path
        by_columns = fitted.transform(records).codes
    assert few.dtype == by_columns.dtype == np.int64 and few.shape == by_columns.shape
    np.testing.assert_array_equal(few, by_columns)
    # row-major as before: the ridges' sums over a row's codes follow the layout
    assert few.flags.c_contiguous and by_columns.flags.c_contiguous
