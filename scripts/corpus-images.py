# SPDX-License-Identifier: GPL-3.0-or-later
# Small deterministic images for the corpus sites (scripts/corpus-sites): PNG and baseline JPEG
# written with the standard library only (zlib), so that the corpus is regenerated bit for bit
# on any machine with python3, no imaging package needed.
import math
import struct
import zlib


def png(width, height, pixel):
    """An RGB PNG; pixel(x, y) -> (r, g, b)."""
    raw = bytearray()
    for y in range(height):
        raw.append(0)  # filter: none
        for x in range(width):
            raw.extend(pixel(x, y))
    return png_of_rows(width, height, bytes(raw), 9)


def png_of_rows(width, height, raw, level):
    """An RGB PNG of `raw`: its rows, each a filter byte and 3 bytes a pixel, deflated at `level`."""

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw, level)) + chunk(b"IEND", b""))


# ----- Baseline JPEG (ITU T.81): 4:2:0 YCbCr, the standard quantisation tables scaled to a
# quality, Huffman tables optimised per image (Annex K.2, as libjpeg's optimize_coding).

_LUMA_Q = [16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56,
           14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
           49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99]
_CHROMA_Q = [17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99, 24, 26, 56, 99, 99, 99, 99, 99,
             47, 66, 99, 99, 99, 99, 99, 99] + [99] * 32
_ZIGZAG = sorted(range(64), key=lambda i: (i // 8 + i % 8, (i % 8) if (i // 8 + i % 8) % 2 == 0 else (i // 8)))
_COS = [[(math.sqrt(0.5) if u == 0 else 1.0) * 0.5 * math.cos((2 * x + 1) * u * math.pi / 16) for x in range(8)]
        for u in range(8)]


def _scaled(table, quality):
    scale = 5000 // quality if quality < 50 else 200 - 2 * quality
    return [min(255, max(1, (q * scale + 50) // 100)) for q in table]


def _fdct(block):
    rows = [[sum(c[x] * row[x] for x in range(8)) for c in _COS] for row in (block[i * 8:i * 8 + 8] for i in range(8))]
    out = [0.0] * 64
    for u in range(8):
        cu = _COS[u]
        for v in range(8):
            out[u * 8 + v] = sum(cu[y] * rows[y][v] for y in range(8))
    return out


def _category(value):
    value = abs(value)
    n = 0
    while value:
        n += 1
        value >>= 1
    return n


def _symbols(coefficients, previous_dc):
    """The (symbol, extra bits, extra length) of one quantised block, DC first."""
    diff = coefficients[0] - previous_dc
    size = _category(diff)
    out = [(size, diff if diff >= 0 else diff + (1 << size) - 1, size)]
    run = 0
    for k in range(1, 64):
        c = coefficients[k]
        if c == 0:
            run += 1
            continue
        while run > 15:
            out.append((0xF0, 0, 0))
            run -= 16
        size = _category(c)
        out.append(((run << 4) | size, c if c >= 0 else c + (1 << size) - 1, size))
        run = 0
    if run:
        out.append((0x00, 0, 0))
    return out


def _huffman_table(frequencies):
    """bits[1..16] and the symbols in code order, lengths limited to 16 (Annex K.2)."""
    freq = [0] * 257
    for s, f in frequencies.items():
        freq[s] = f
    freq[256] = 1  # reserved: no code of all ones
    codesize = [0] * 257
    others = [-1] * 257
    while True:
        v1 = v2 = -1
        for i in range(257):
            if freq[i] and (v1 < 0 or freq[i] <= freq[v1]):
                v1 = i
        for i in range(257):
            if freq[i] and i != v1 and (v2 < 0 or freq[i] <= freq[v2]):
                v2 = i
        if v2 < 0:
            break
        freq[v1] += freq[v2]
        freq[v2] = 0
        codesize[v1] += 1
        while others[v1] >= 0:
            v1 = others[v1]
            codesize[v1] += 1
        others[v1] = v2
        codesize[v2] += 1
        while others[v2] >= 0:
            v2 = others[v2]
            codesize[v2] += 1
    bits = [0] * 33
    for i in range(257):
        if codesize[i]:
            bits[codesize[i]] += 1
    for i in range(32, 16, -1):
        while bits[i] > 0:
            j = i - 2
            while bits[j] == 0:
                j -= 1
            bits[i] -= 2
            bits[i - 1] += 1
            bits[j + 1] += 2
            bits[j] -= 1
    i = 16
    while bits[i] == 0:
        i -= 1
    bits[i] -= 1
    values = [s for size in range(1, 33) for s in range(256) if codesize[s] == size]
    codes = {}
    code = 0
    k = 0
    for length in range(1, 17):
        for _ in range(bits[length]):
            codes[values[k]] = (code, length)
            code += 1
            k += 1
        code <<= 1
    return bits[1:17], values, codes


def jpeg(width, height, pixel, quality=80):
    """A baseline JPEG; pixel(x, y) -> (r, g, b)."""
    pw, ph = (width + 15) // 16 * 16, (height + 15) // 16 * 16
    ys, cbs, crs = [], [], []
    for y in range(ph):
        for x in range(pw):
            r, g, b = pixel(min(x, width - 1), min(y, height - 1))
            ys.append(0.299 * r + 0.587 * g + 0.114 * b - 128)
            cbs.append(-0.168736 * r - 0.331264 * g + 0.5 * b)
            crs.append(0.5 * r - 0.418688 * g - 0.081312 * b)
    qy, qc = _scaled(_LUMA_Q, quality), _scaled(_CHROMA_Q, quality)

    def quantised(plane, stride, x0, y0, step, table):
        block = []
        for y in range(8):
            for x in range(8):
                if step == 1:
                    block.append(plane[(y0 + y) * stride + x0 + x])
                else:  # 2x2 average (chroma subsampling)
                    i = (y0 + 2 * y) * stride + x0 + 2 * x
                    block.append((plane[i] + plane[i + 1] + plane[i + stride] + plane[i + stride + 1]) / 4)
        d = _fdct(block)
        return [int(round(d[_ZIGZAG[k]] / table[_ZIGZAG[k]])) for k in range(64)]

    blocks = []  # (table 0 luma / 1 chroma, symbols)
    dc = [0, 0, 0]
    for my in range(0, ph, 16):
        for mx in range(0, pw, 16):
            for oy, ox in ((0, 0), (0, 8), (8, 0), (8, 8)):
                q = quantised(ys, pw, mx + ox, my + oy, 1, qy)
                blocks.append((0, _symbols(q, dc[0])))
                dc[0] = q[0]
            for c, plane in ((1, cbs), (2, crs)):
                q = quantised(plane, pw, mx, my, 2, qc)
                blocks.append((1, _symbols(q, dc[c])))
                dc[c] = q[0]
    tables = []
    for t in (0, 1):
        dc_freq, ac_freq = {}, {}
        for table, symbols in blocks:
            if table != t:
                continue
            dc_freq[symbols[0][0]] = dc_freq.get(symbols[0][0], 0) + 1
            for s, _, _ in symbols[1:]:
                ac_freq[s] = ac_freq.get(s, 0) + 1
        tables.append((_huffman_table(dc_freq), _huffman_table(ac_freq)))

    out = bytearray()
    acc = nbits = 0

    def put(value, length):
        nonlocal acc, nbits
        acc = (acc << length) | value
        nbits += length
        while nbits >= 8:
            byte = (acc >> (nbits - 8)) & 0xFF
            out.append(byte)
            if byte == 0xFF:
                out.append(0)
            nbits -= 8
        acc &= (1 << nbits) - 1

    for table, symbols in blocks:
        (_, _, dc_codes), (_, _, ac_codes) = tables[table]
        for i, (s, extra, length) in enumerate(symbols):
            code, code_length = (dc_codes if i == 0 else ac_codes)[s]
            put(code, code_length)
            if length:
                put(extra, length)
    if nbits:
        put((1 << (8 - nbits)) - 1, 8 - nbits)

    def segment(marker, data):
        return struct.pack(">BBH", 0xFF, marker, len(data) + 2) + data

    head = b"\xff\xd8" + segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")
    head += segment(0xDB, bytes([0]) + bytes(qy[_ZIGZAG[k]] for k in range(64)) + bytes([1]) + bytes(qc[_ZIGZAG[k]] for k in range(64)))
    head += segment(0xC0, struct.pack(">BHHB", 8, height, width, 3) + bytes([1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]))
    for t, ((dc_bits, dc_values, _), (ac_bits, ac_values, _)) in enumerate(tables):
        head += segment(0xC4, bytes([t]) + bytes(dc_bits) + bytes(dc_values))
        head += segment(0xC4, bytes([0x10 | t]) + bytes(ac_bits) + bytes(ac_values))
    head += segment(0xDA, bytes([3, 1, 0x00, 2, 0x11, 3, 0x11, 0, 63, 0]))
    return bytes(head) + bytes(out) + b"\xff\xd9"
