"""ListedAttributes: which current/ listings carry attributes (the rest carry types only)."""

from gitfs.views.listed_attributes import ListedAttributes, parent


def test_a_folder_listed_with_attributes_is_listed_with_types_until_an_entry_is_asked_about():
    listed = ListedAttributes()
    assert listed.wanted("/d")
    assert not listed.wanted("/d")
    listed.asked("/other/f.txt")  # another folder's entry changes nothing here
    assert not listed.wanted("/d")
    listed.asked("/d/f.txt")
    assert listed.wanted("/d")
    assert not listed.wanted("/d")


def test_the_root_s_entries_belong_to_the_root():
    listed = ListedAttributes()
    assert parent("/f.txt") == "/" and parent("/d/e/f.txt") == "/d/e" and parent("/d") == "/"
    assert listed.wanted("/") and not listed.wanted("/")
    listed.asked("/f.txt")
    assert listed.wanted("/")


def test_an_entry_asked_about_during_the_listing_marks_its_folder_again():
    listed = ListedAttributes()
    assert listed.wanted("/d")  # the listing starts: counted as handed over from here
    listed.asked("/d/f.txt")  # a LOOKUP races with it
    assert listed.wanted("/d")


def test_a_full_table_forgets_every_folder():
    listed = ListedAttributes(bound=3)
    for folder in ("/a", "/b", "/c"):
        assert listed.wanted(folder)
    assert not listed.wanted("/a")
    assert listed.wanted("/d")  # full: everything forgotten, /d kept
    assert listed.wanted("/a") and not listed.wanted("/d")
