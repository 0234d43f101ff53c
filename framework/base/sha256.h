/* SHA-256 (FIPS 180-4), for deriving keys from a shared secret (framework/rpc). */
#ifndef RILL_FRAMEWORK_BASE_SHA256_H
#define RILL_FRAMEWORK_BASE_SHA256_H

#include <stddef.h>
#include <stdint.h>

void rill_sha256(const void *data, size_t len, uint8_t out[32]);

#endif
