"""A user's time zone as they type it: IANA names, cities, UTC offsets."""

from __future__ import annotations

from zoneinfo import ZoneInfo

import pytest

from agent.utils.time_zones import DEFAULT_ZONE, find_zone, zone_label, zone_of


@pytest.mark.parametrize(
    ("said", "key"),
    [
        ("Europe/Lisbon", "Europe/Lisbon"),
        ("europe/lisbon", "Europe/Lisbon"),
        ("Lisbon", "Europe/Lisbon"),
        ("new york", "America/New_York"),
        ("New_York", "America/New_York"),
        ("Tokyo.", "Asia/Tokyo"),
        ("UTC", "UTC"),
        ("gmt", "UTC"),
        ("UTC+2", "Etc/GMT-2"),
        ("GMT -5", "Etc/GMT+5"),
        ("utc+0", "UTC"),
    ],
)
def test_a_zone_is_found_the_way_people_type_it(said, key):
    zone = find_zone(said)
    assert zone is not None
    assert zone.key == key


@pytest.mark.parametrize("said", ["", "nowhere", "UTC+15", "Mars/Olympus", "x" * 200])
def test_no_zone_is_none(said):
    assert find_zone(said) is None


def test_a_zone_is_said_as_people_read_it():
    assert zone_label(DEFAULT_ZONE) == "UTC"
    assert zone_label(ZoneInfo("Europe/Lisbon")) == "Europe/Lisbon"
    assert zone_label(ZoneInfo("Etc/GMT-2")) == "UTC+2"
    assert zone_label(ZoneInfo("Etc/GMT+5")) == "UTC-5"


def test_a_kept_name_this_system_lacks_is_utc():
    assert zone_of(None) == DEFAULT_ZONE
    assert zone_of("Mars/Olympus") == DEFAULT_ZONE
    assert zone_of("Asia/Tokyo") == ZoneInfo("Asia/Tokyo")
