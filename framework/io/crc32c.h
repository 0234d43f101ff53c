/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of checkpoint
 * files: the SSE4.2 crc32 instruction when the CPU has it (three independent chains
 * over 12 KiB blocks, combined), else a slice-by-8 table.
 * rill_crc32c(0, "123456789", 9) == 0xE3069283. */
#ifndef RILL_FRAMEWORK_IO_CRC32C_H
#define RILL_FRAMEWORK_IO_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Extends `crc` (0 to start) over `n` bytes. */
uint32_t rill_crc32c(uint32_t crc, const void *data, size_t n);
/* The table version, whatever the CPU (for tests). */
uint32_t rill_crc32c_portable(uint32_t crc, const void *data, size_t n);

#endif
