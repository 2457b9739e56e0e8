// TESSERA_SANITIZED_ALLOCATOR: defined when a sanitizer replaces the
// allocator (ASan, HWASan, MSan, TSan), whose memory neither large_pages.cpp's
// advice nor glibc's heap tunable (heap_pages.h) reaches.
#pragma once

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(hwaddress_sanitizer) || __has_feature(memory_sanitizer) || \
    __has_feature(thread_sanitizer)
#define TESSERA_SANITIZED_ALLOCATOR 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_HWADDRESS__) || defined(__SANITIZE_THREAD__)
#define TESSERA_SANITIZED_ALLOCATOR 1
#endif
