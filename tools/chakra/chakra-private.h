/* tools/chakra/chakra-private.h — what the Chakra reader and writer share:
 * the generated message code and the varint of the length-delimited
 * framing (the framing is Chakra's, not protobuf's: protobuf-c encodes and
 * decodes the messages themselves). */
#pragma once
#include <glib.h>
#include "tools/chakra/et_def.pb-c.h"

/* Encode `v` as a base-128 varint into out (10 bytes are enough); returns
 * the length. */
static inline gsize
sp_chakra_varint_encode (guint64 v, guint8 *out)
{
  gsize n = 0;
  do
    {
      guint8 b = v & 0x7f;
      v >>= 7;
      out[n++] = b | (v ? 0x80 : 0);
    }
  while (v);
  return n;
}

typedef enum {
  SP_CHAKRA_VARINT_OK = 0,
  SP_CHAKRA_VARINT_TRUNCATED,  /* the stream ends inside the varint */
  SP_CHAKRA_VARINT_BAD,        /* more than 10 bytes, or beyond 64 bits */
} SpChakraVarint;

/* Decode a varint from p[0 .. avail); *out_len = bytes used. */
static inline SpChakraVarint
sp_chakra_varint_decode (const guint8 *p, gsize avail, guint64 *out_value, gsize *out_len)
{
  guint64 v = 0;
  for (gsize i = 0; i < 10; i++)
    {
      if (i >= avail)
        return SP_CHAKRA_VARINT_TRUNCATED;
      if (i == 9 && (p[i] & 0xfe))
        return SP_CHAKRA_VARINT_BAD;
      v |= (guint64) (p[i] & 0x7f) << (7 * i);
      if (!(p[i] & 0x80))
        {
          *out_value = v;
          *out_len = i + 1;
          return SP_CHAKRA_VARINT_OK;
        }
    }
  return SP_CHAKRA_VARINT_BAD;
}
