// The translation unit that builds pcp_test_pch's precompiled header (tests/pch/CMakeLists.txt);
// it has no code of its own.
