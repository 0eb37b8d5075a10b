// The translation unit that builds pcp_service_pch's precompiled header
// (services/pch/CMakeLists.txt); it has no code of its own.
