/* Where the first word that may match a query term starts, read straight from a Python str.
 *
 * scopegate.search.snippet.TermFinder needs the first place in a raw body where an ASCII needle
 * (snippet.needle: a query term, or the part of it every word analysed to it contains) occurs
 * case-insensitively with no ASCII word character just before it. In Python that costs a lowered copy of the body and one search per
 * needle (about 3 ns per character on a 30 KB ticket); here it is one pass over the string's own
 * storage (1, 2 or 4 bytes per character) with no copy. No library offers this: regex engines
 * either need a lowered copy or are slower case-insensitively (RE2 and `regex` were measured),
 * and Aho-Corasick packages are case-sensitive. The pure-Python path stays the fallback and the
 * reference (tests/unit/test_wordscan.py holds both to the same answers).
 *
 * clean_head(text, start, need) -> (str, bool)
 * clean_tail(text, end, need) -> (str, bool)
 *   scopegate.text's cleaning (control characters dropped, whitespace runs collapsed to one space,
 *   none at the ends) of just the part of text a snippet window needs, in one pass with no slice,
 *   split or join: the contracts are scopegate.text.clean_head's and clean_tail's, which stay the
 *   fallback (tests/unit/test_shaper_bounded.py holds both to them). clean_head returns `need`
 *   or `need` + 1 characters, or all of the cleaned rest when it is shorter (and then True).
 *
 * word_end(text, at) -> int
 *   Where the run of word characters (word_runs' rule, continuation marks included) that goes on
 *   from text[at] ends: re.compile(WORD_CHAR + "*").match(text, at).end(), in 50 ns instead of 1.4 us.
 *
 * word_runs(text) -> str
 *   The words of text (as the engines' \w finds them; scripts/gen_word_marks.py has the rule and
 *   generates the tables in _word_marks.h, frozen at one Unicode version), joined by one space, for
 *   tantivy's whitespace tokenizer to split again. tantivy's regex tokenizer costs about 0.2 ms per 3 KB ticket in its per-token
 *   regex calls; this pass and the whitespace split together cost a fifth of that (issue 13). The
 *   Python fallback is " ".join(WORD_RE.findall(text)) (scopegate.search.analysis), the same string.
 *
 * first_start(text, needles, start, known_misses=None, word_terms=None, wanted=None) -> int
 *   needles: tuple of 1..64 non-empty lowercase ASCII bytes objects.
 *   Returns the smallest i >= start where some needle starts, case-insensitively over ASCII,
 *   and text[i - 1] (if i > 0) is not an ASCII letter, digit or underscore; -1 if there is none;
 *   -2 if a character whose lowercase is ASCII but which is not ASCII itself (U+0130, U+212A)
 *   comes first: the caller's Unicode-aware path decides from there.
 *   known_misses: a set of words the caller has already checked and rejected. A candidate whose
 *   word (the run of word characters from i, by the rule of word_runs) is in it is passed over,
 *   and the scan goes on after that word, unless text[i - 1] is not ASCII (a letter there could
 *   open the word earlier: the caller decides). A body repeats its words, so most candidates are
 *   settled here instead of by a round trip to Python (about 5 us each).
 *   word_terms, wanted: a dict of words already analysed (word -> tuple of terms, the caller's
 *   analyser) and the set of query terms. A candidate whose word is in word_terms is settled here
 *   too: passed over when none of its terms is wanted, returned when one is.
 *
 * first_window(text, needles, start, known_misses, word_terms, wanted, before_need, after_need)
 *   first_start; and when word_terms settled the candidate as a match (nothing is left for the
 *   caller to check), the snippet window around it in the same call: (at, clean_tail(text, at,
 *   before_need), clean_head(text, at, after_need)); otherwise first_start's int. One call instead
 *   of four round trips per hit (issue 13: shaping 5 hits of 30 KB, 4-6% less time).
 *
 * snippets_size(sources, limit) -> int
 * shrink_limit(sources, base, budget, limit, size, floor) -> (limit, size)
 * cut_snippets(sources, limit) -> list[str]
 *   The shaper's shrink rounds over a page's prepared snippet sources (SnippetSource tuples):
 *   snippet.py_snippets_size, py_shrink_limit and py_cut_snippets are the definitions and the fallback
 *   (tests/unit/test_wordscan.py holds these to them, string storage width included); why they are
 *   in C is said there, above py_snippets_size.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_word_marks.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#define HAVE_SSE2 1
#endif

#define MAX_NEEDLES 64
#define RELEASE_GIL_CHARS 1000000

static unsigned char LOWER[128];
static unsigned char IS_WORD[129];

typedef struct {
    Py_ssize_t count;
    const char *bytes[MAX_NEEDLES];
    Py_ssize_t len[MAX_NEEDLES];
    uint64_t by_first[128]; /* needles (bit k) whose first byte is this lowercase character */
} Needles;

/* Whether some needle starts at data[at] (an ASCII character that begins one), case-insensitively. */
#define NEEDLE_AT(TYPE)                                                                    \
    static inline int needle_at_##TYPE(const TYPE *data, Py_ssize_t size, Py_ssize_t at,   \
                                       const Needles *nd) {                                \
        uint64_t mask = nd->by_first[LOWER[data[at]]];                                     \
        while (mask) {                                                                     \
            int k = __builtin_ctzll(mask);                                                 \
            mask &= mask - 1;                                                              \
            Py_ssize_t n = nd->len[k], m = 1;                                              \
            if (at + n > size) continue;                                                   \
            const char *s = nd->bytes[k];                                                  \
            for (; m < n; m++) {                                                           \
                Py_UCS4 d = data[at + m];                                                  \
                if (d >= 128 || LOWER[d] != (unsigned char)s[m]) break;                    \
            }                                                                              \
            if (m == n) return 1;                                                          \
        }                                                                                  \
        return 0;                                                                          \
    }

NEEDLE_AT(Py_UCS1)
NEEDLE_AT(Py_UCS2)
NEEDLE_AT(Py_UCS4)

/* Branch-free over ordinary characters (word boundaries come every few characters, too often for
 * a branch to be predicted): each character gives "starts a word with a needle's first letter" by
 * two table reads, and only such candidates (and U+0130, U+212A) leave the loop's fast path.
 * Tables have 129 entries: index 128 stands for every non-ASCII character. */
#define SCAN(TYPE)                                                                        \
    static Py_ssize_t scan_##TYPE(const TYPE *data, Py_ssize_t size, Py_ssize_t start,    \
                                  const Needles *nd, const unsigned char *first) {        \
        unsigned prev = 0;                                                                \
        if (start > 0) {                                                                  \
            Py_UCS4 b = data[start - 1];                                                  \
            prev = IS_WORD[b < 128 ? b : 128];                                            \
        }                                                                                 \
        for (Py_ssize_t i = start; i < size; i++) {                                       \
            Py_UCS4 c = data[i];                                                          \
            unsigned idx = c < 128 ? c : 128;                                             \
            unsigned hit = first[idx] & (prev ^ 1u);                                      \
            prev = IS_WORD[idx];                                                          \
            if (sizeof(TYPE) > 1) hit |= (c == 0x130) | (c == 0x212A);                    \
            if (__builtin_expect(hit, 0)) {                                               \
                if (c >= 128) return -2;                                                  \
                if (needle_at_##TYPE(data, size, i, nd)) return i;                        \
            }                                                                             \
        }                                                                                 \
        return -1;                                                                        \
    }

SCAN(Py_UCS1)
SCAN(Py_UCS2)
SCAN(Py_UCS4)

#ifdef HAVE_SSE2
/* The same scan 16 characters at a time (SSE2, in every x86-64 CPU); the loop above finishes the
 * last few characters and serves other CPUs. Each block is narrowed to 16 bytes that keep ASCII as
 * it is and turn every other character into a byte no needle starts with and that is no ASCII word
 * character (128..255 as they are, the rest 0 or 255), so one byte-wise test finds the block's
 * candidates: a needle's first letter (either case) where no ASCII word character precedes. U+0130
 * and U+212A get their own mask, in text order with the candidates, as in the loop above. */
typedef struct {
    int letters, others;
    __m128i letter[MAX_NEEDLES]; /* lowercase first letters, compared with the byte | 0x20 */
    __m128i other[MAX_NEEDLES];  /* digits and '_', compared as they are */
} Firsts;

static void firsts_of(const Needles *nd, Firsts *f) {
    f->letters = f->others = 0;
    for (int c = 0; c < 128; c++) {
        if (!nd->by_first[c]) continue;
        if (c >= 'a' && c <= 'z') f->letter[f->letters++] = _mm_set1_epi8((char)c);
        else f->other[f->others++] = _mm_set1_epi8((char)c);
    }
}

static inline __m128i in_range(__m128i x, char low, char span) {
    __m128i t = _mm_sub_epi8(x, _mm_set1_epi8(low));
    return _mm_cmpeq_epi8(_mm_min_epu8(t, _mm_set1_epi8(span)), t);
}

/* Bit j of the result: byte j starts some needle's first letter; *word: byte j is an ASCII word character. */
static inline unsigned block_masks(__m128i b, const Firsts *f, unsigned *word) {
    __m128i folded = _mm_or_si128(b, _mm_set1_epi8(0x20)); /* 'A'..'Z' -> 'a'..'z'; no other byte lands there */
    __m128i first = _mm_setzero_si128();
    for (int k = 0; k < f->letters; k++) first = _mm_or_si128(first, _mm_cmpeq_epi8(folded, f->letter[k]));
    for (int k = 0; k < f->others; k++) first = _mm_or_si128(first, _mm_cmpeq_epi8(b, f->other[k]));
    __m128i w = _mm_or_si128(_mm_or_si128(in_range(b, '0', 9), in_range(folded, 'a', 25)),
                             _mm_cmpeq_epi8(b, _mm_set1_epi8('_')));
    *word = (unsigned)_mm_movemask_epi8(w);
    return (unsigned)_mm_movemask_epi8(first);
}

static inline __m128i special16(__m128i w) { /* 16-bit lanes holding U+0130 or U+212A */
    return _mm_or_si128(_mm_cmpeq_epi16(w, _mm_set1_epi16(0x130)), _mm_cmpeq_epi16(w, _mm_set1_epi16(0x212A)));
}

/* packus saturates: signed 16-bit lanes over 255 become 255, negative ones (U+8000..U+FFFF) 0. */
#define LOAD_Py_UCS1(p, sp) (*(sp) = 0, _mm_loadu_si128((const __m128i *)(p)))
#define LOAD_Py_UCS2(p, sp) load_ucs2((p), (sp))
#define LOAD_Py_UCS4(p, sp) load_ucs4((p), (sp))

static inline __m128i load_ucs2(const Py_UCS2 *p, unsigned *sp) {
    __m128i a = _mm_loadu_si128((const __m128i *)p), b = _mm_loadu_si128((const __m128i *)(p + 8));
    *sp = (unsigned)_mm_movemask_epi8(_mm_packs_epi16(special16(a), special16(b)));
    return _mm_packus_epi16(a, b);
}

static inline __m128i load_ucs4(const Py_UCS4 *p, unsigned *sp) {
    /* Code points fit a signed 32-bit lane; packs keeps 0..0x7FFF (U+0130, U+212A included), saturates the rest. */
    __m128i a = _mm_packs_epi32(_mm_loadu_si128((const __m128i *)p), _mm_loadu_si128((const __m128i *)(p + 4)));
    __m128i b = _mm_packs_epi32(_mm_loadu_si128((const __m128i *)(p + 8)), _mm_loadu_si128((const __m128i *)(p + 12)));
    *sp = (unsigned)_mm_movemask_epi8(_mm_packs_epi16(special16(a), special16(b)));
    return _mm_packus_epi16(a, b);
}

#define SCAN_SSE2(TYPE)                                                                    \
    static Py_ssize_t sse2_##TYPE(const TYPE *data, Py_ssize_t size, Py_ssize_t start,     \
                                  const Needles *nd, const unsigned char *first) {         \
        Firsts f;                                                                          \
        firsts_of(nd, &f);                                                                 \
        unsigned carry = 0; /* the character before the block is an ASCII word character */ \
        if (start > 0) {                                                                   \
            Py_UCS4 b = data[start - 1];                                                   \
            carry = IS_WORD[b < 128 ? b : 128];                                            \
        }                                                                                  \
        Py_ssize_t i = start;                                                              \
        for (; i + 16 <= size; i += 16) {                                                  \
            unsigned special, word;                                                        \
            __m128i bytes = LOAD_##TYPE(data + i, &special);                               \
            unsigned cand = block_masks(bytes, &f, &word) & ~((word << 1) | carry) & 0xFFFFu; \
            carry = (word >> 15) & 1u;                                                     \
            unsigned todo = cand | special;                                                \
            while (todo) {                                                                 \
                int j = __builtin_ctz(todo);                                               \
                todo &= todo - 1;                                                          \
                if ((special >> j) & 1u) return -2;                                        \
                if (needle_at_##TYPE(data, size, i + j, nd)) return i + j;                \
            }                                                                              \
        }                                                                                  \
        return i < size ? scan_##TYPE(data, size, i, nd, first) : -1;                      \
    }

SCAN_SSE2(Py_UCS1)
SCAN_SSE2(Py_UCS2)
SCAN_SSE2(Py_UCS4)
#define SCAN_KIND(TYPE) sse2_##TYPE
#else
#define SCAN_KIND(TYPE) scan_##TYPE
#endif

static Py_ssize_t scan(int kind, const void *data, Py_ssize_t size, Py_ssize_t start, const Needles *nd) {
    unsigned char first[129]; /* 1 where this character, lowercased, begins some needle */
    for (int c = 0; c < 128; c++) first[c] = nd->by_first[LOWER[c]] != 0;
    first[128] = 0;
    switch (kind) {
        case PyUnicode_1BYTE_KIND: return SCAN_KIND(Py_UCS1)((const Py_UCS1 *)data, size, start, nd, first);
        case PyUnicode_2BYTE_KIND: return SCAN_KIND(Py_UCS2)((const Py_UCS2 *)data, size, start, nd, first);
        default: return SCAN_KIND(Py_UCS4)((const Py_UCS4 *)data, size, start, nd, first);
    }
}

static int word_class(Py_UCS4 c);

/* Where the run of word characters from ``at`` ends, by word_runs' rule with marks continuing the
 * run: for a word that starts at ``at``, the word Python's snippet code cuts there (analysis.WORD_RE). */
static Py_ssize_t word_end(int kind, const void *data, Py_ssize_t size, Py_ssize_t at) {
    Py_ssize_t i = at;
    while (i < size) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c < 128 ? !IS_WORD[c] : word_class(c) == 0) break;
        i++;
    }
    return i;
}

/* first_start's work: the candidate's offset (or -1, -2) in *found; *settled: 1 when word_terms settled
 * it as a match (its word's terms hold a wanted one). Returns -1 with an exception set on error. */
static int find_first(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t *found_out, int *settled) {
    *settled = 0;
    if (nargs < 3 || nargs > 6) {
        PyErr_SetString(PyExc_TypeError,
                        "first_start(text, needles, start, known_misses=None, word_terms=None, wanted=None) "
                        "takes 3 to 6 arguments");
        return -1;
    }
    PyObject *text = args[0], *tuple = args[1];
    if (!PyUnicode_Check(text) || !PyTuple_Check(tuple)) {
        PyErr_SetString(PyExc_TypeError, "first_start: text must be str and needles a tuple of bytes");
        return -1;
    }
    PyObject *misses = nargs >= 4 && args[3] != Py_None ? args[3] : NULL;
    if (misses != NULL && !PyAnySet_Check(misses)) {
        PyErr_SetString(PyExc_TypeError, "first_start: known_misses must be a set of str or None");
        return -1;
    }
    PyObject *terms_of = nargs >= 5 && args[4] != Py_None ? args[4] : NULL;
    PyObject *wanted = nargs == 6 && args[5] != Py_None ? args[5] : NULL;
    if ((terms_of != NULL && !PyDict_Check(terms_of)) || (wanted != NULL && !PyAnySet_Check(wanted)) ||
        (terms_of == NULL) != (wanted == NULL)) {
        PyErr_SetString(PyExc_TypeError, "first_start: word_terms (a dict) and wanted (a set) come together");
        return -1;
    }
    Py_ssize_t start = PyLong_AsSsize_t(args[2]);
    if (start == -1 && PyErr_Occurred()) return -1;
    Needles nd;
    memset(nd.by_first, 0, sizeof nd.by_first);
    nd.count = PyTuple_GET_SIZE(tuple);
    if (nd.count < 1 || nd.count > MAX_NEEDLES) {
        PyErr_SetString(PyExc_ValueError, "first_start: between 1 and 64 needles");
        return -1;
    }
    for (Py_ssize_t k = 0; k < nd.count; k++) {
        PyObject *item = PyTuple_GET_ITEM(tuple, k);
        if (!PyBytes_Check(item) || PyBytes_GET_SIZE(item) < 1) {
            PyErr_SetString(PyExc_TypeError, "first_start: each needle must be non-empty bytes");
            return -1;
        }
        const char *s = PyBytes_AS_STRING(item);
        Py_ssize_t n = PyBytes_GET_SIZE(item);
        for (Py_ssize_t j = 0; j < n; j++) {
            unsigned char u = (unsigned char)s[j];
            if (u >= 128 || LOWER[u] != u) {
                PyErr_SetString(PyExc_ValueError, "first_start: needles must be lowercase ASCII");
                return -1;
            }
        }
        nd.bytes[k] = s;
        nd.len[k] = n;
        nd.by_first[(unsigned char)s[0]] |= (uint64_t)1 << k;
    }
    Py_ssize_t size = PyUnicode_GET_LENGTH(text);
    if (start < 0) start = 0;
    if (start >= size) return (*found_out = -1, 0);
    const void *data = PyUnicode_DATA(text);
    int kind = PyUnicode_KIND(text);
    Py_ssize_t found;
    for (;;) {
        /* The scan reads immutable str storage only, so other threads may run meanwhile; but handing
         * the GIL over costs more than scanning a ticket, so only very long texts let go of it. */
        if (size - start > RELEASE_GIL_CHARS) {
            Py_BEGIN_ALLOW_THREADS
            found = scan(kind, data, size, start, &nd);
            Py_END_ALLOW_THREADS
        } else {
            found = scan(kind, data, size, start, &nd);
        }
        if (found < 0 || (misses == NULL && terms_of == NULL) ||
            (found > 0 && PyUnicode_READ(kind, data, found - 1) >= 128))
            break;
        Py_ssize_t stop = word_end(kind, data, size, found);
        PyObject *word = PyUnicode_Substring(text, found, stop);
        if (word == NULL) return -1;
        int pass = misses != NULL ? PySet_Contains(misses, word) : 0; /* 1: a known miss, go on */
        if (pass == 0 && terms_of != NULL) {
            PyObject *terms = PyDict_GetItemWithError(terms_of, word); /* borrowed */
            if (terms == NULL && PyErr_Occurred()) pass = -1;
            else if (terms != NULL && PyTuple_Check(terms)) {
                int hit = 0;
                for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(terms) && hit == 0; k++)
                    hit = PySet_Contains(wanted, PyTuple_GET_ITEM(terms, k));
                pass = hit < 0 ? -1 : !hit;
                *settled = hit > 0;
            }
        }
        Py_DECREF(word);
        if (pass < 0) return -1;
        if (!pass) break;
        start = stop;
        if (start >= size) return (*found_out = -1, 0);
    }
    *found_out = found;
    return 0;
}

static PyObject *first_start(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t found;
    int settled;
    if (find_first(args, nargs, &found, &settled) < 0) return NULL;
    return PyLong_FromSsize_t(found);
}

static PyObject *cleaned_head(PyObject *text, Py_ssize_t start, Py_ssize_t need);
static PyObject *cleaned_tail(PyObject *text, Py_ssize_t end, Py_ssize_t need);

/* first_window(text, needles, start, known_misses, word_terms, wanted, before_need, after_need): see the header. */
static PyObject *first_window(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError,
                        "first_window(text, needles, start, known_misses, word_terms, wanted, before_need, "
                        "after_need) takes 8 arguments");
        return NULL;
    }
    Py_ssize_t before_need = PyLong_AsSsize_t(args[6]), after_need;
    if (before_need == -1 && PyErr_Occurred()) return NULL;
    after_need = PyLong_AsSsize_t(args[7]);
    if (after_need == -1 && PyErr_Occurred()) return NULL;
    if (before_need < 0 || after_need < 0) {
        PyErr_SetString(PyExc_ValueError, "first_window: the needs must not be negative");
        return NULL;
    }
    Py_ssize_t found;
    int settled;
    if (find_first(args, 6, &found, &settled) < 0) return NULL;
    if (!settled) return PyLong_FromSsize_t(found);
    PyObject *tail = cleaned_tail(args[0], found, before_need);
    if (tail == NULL) return NULL;
    PyObject *head = cleaned_head(args[0], found, after_need);
    if (head == NULL) {
        Py_DECREF(tail);
        return NULL;
    }
    return Py_BuildValue("(nNN)", found, tail, head);
}

static int in_ranges(Py_UCS4 c, const CodeRange *table, int count) {
    if (c < table[0].first || c > table[count - 1].last) return 0;
    int lo = 0, hi = count - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (c < table[mid].first) hi = mid - 1;
        else if (c > table[mid].last) lo = mid + 1;
        else return 1;
    }
    return 0;
}

/* What a non-ASCII character is to a word, from the frozen tables only (never the interpreter's own
 * Unicode database: scripts/gen_word_marks.py says why): 2 starts or continues one, 1 only continues
 * one (marks, ZWNJ/ZWJ), 0 ends it. Below U+0800 (Latin, Greek, Cyrillic, Hebrew, Arabic...) from a
 * table filled once at import; above, a binary search of the ranges. */
#define LOW_CLASS_SIZE 0x800
static unsigned char LOW_CLASS[LOW_CLASS_SIZE];

static int table_class(Py_UCS4 c) {
    if (in_ranges(c, WORD_STARTS, WORD_STARTS_COUNT)) return 2;
    return in_ranges(c, WORD_MARKS, WORD_MARKS_COUNT) ? 1 : 0;
}

static int word_class(Py_UCS4 c) {
    return c < LOW_CLASS_SIZE ? LOW_CLASS[c] : table_class(c);
}

#define RUNS(TYPE)                                                                        \
    static Py_ssize_t runs_##TYPE(const TYPE *in, Py_ssize_t size, TYPE *out) {            \
        Py_ssize_t n = 0;                                                                 \
        int in_word = 0;                                                                  \
        for (Py_ssize_t i = 0; i < size; i++) {                                           \
            Py_UCS4 c = in[i];                                                            \
            int word;                                                                     \
            if (c < 128) word = IS_WORD[c];                                               \
            else {                                                                        \
                int cls = word_class(c);                                                  \
                word = cls == 2 || (cls == 1 && in_word); /* a mark never starts a word */ \
            }                                                                             \
            if (word) {                                                                   \
                if (!in_word && n > 0) out[n++] = ' ';                                    \
                out[n++] = (TYPE)c;                                                       \
            }                                                                             \
            in_word = word;                                                               \
        }                                                                                 \
        return n;                                                                         \
    }

RUNS(Py_UCS1)
RUNS(Py_UCS2)
RUNS(Py_UCS4)

static PyObject *word_runs(PyObject *self, PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "word_runs: text must be str");
        return NULL;
    }
    Py_ssize_t size = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    /* Runs and one space between two runs never take more characters than the text itself. */
    void *out = PyMem_Malloc(size > 0 ? (size_t)size * (size_t)kind : 1);
    if (out == NULL) return PyErr_NoMemory();
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n;
    switch (kind) {
        case PyUnicode_1BYTE_KIND: n = runs_Py_UCS1((const Py_UCS1 *)data, size, (Py_UCS1 *)out); break;
        case PyUnicode_2BYTE_KIND: n = runs_Py_UCS2((const Py_UCS2 *)data, size, (Py_UCS2 *)out); break;
        default: n = runs_Py_UCS4((const Py_UCS4 *)data, size, (Py_UCS4 *)out); break;
    }
    PyObject *result = PyUnicode_FromKindAndData(kind, out, n);
    PyMem_Free(out);
    return result;
}

/* scopegate.text.CONTROL_CLASS: C0 but \t \n \v \f \r and \x1c-\x1f, DEL, C1 but NEL (\x85). */
static inline int is_control(Py_UCS4 c) {
    return c <= 0x08 || (c >= 0x0E && c <= 0x1B) || (c >= 0x7F && c <= 0x84) || (c >= 0x86 && c <= 0x9F);
}

/* Whether text[from:to] holds a character the cleaning keeps and that is no space (scanning forward). */
static int kept_ahead(int kind, const void *data, Py_ssize_t from, Py_ssize_t to) {
    for (Py_ssize_t i = from; i < to; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (!is_control(c) && !Py_UNICODE_ISSPACE(c)) return 1;
    }
    return 0;
}

static int kept_behind(int kind, const void *data, Py_ssize_t before) {
    for (Py_ssize_t i = before - 1; i >= 0; i--) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (!is_control(c) && !Py_UNICODE_ISSPACE(c)) return 1;
    }
    return 0;
}

static int clean_args(PyObject *const *args, Py_ssize_t nargs, const char *name, Py_ssize_t *at, Py_ssize_t *need) {
    if (nargs != 3 || !PyUnicode_Check(args[0])) {
        PyErr_Format(PyExc_TypeError, "%s(text, position, need) takes a str and two ints", name);
        return -1;
    }
    *at = PyLong_AsSsize_t(args[1]);
    if (*at == -1 && PyErr_Occurred()) return -1;
    *need = PyLong_AsSsize_t(args[2]);
    if (*need == -1 && PyErr_Occurred()) return -1;
    if (*at < 0 || *at > PyUnicode_GET_LENGTH(args[0]) || *need < 0) {
        PyErr_Format(PyExc_ValueError, "%s: position must be within the text and need not negative", name);
        return -1;
    }
    return 0;
}

static PyObject *result_pair(int kind, void *out, Py_ssize_t n, int flag) {
    PyObject *str = PyUnicode_FromKindAndData(kind, out, n);
    PyMem_Free(out);
    if (str == NULL) return NULL;
    return Py_BuildValue("(NO)", str, flag ? Py_True : Py_False);
}

static PyObject *clean_head(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t start, need;
    if (clean_args(args, nargs, "clean_head", &start, &need) < 0) return NULL;
    return cleaned_head(args[0], start, need);
}

static PyObject *cleaned_head(PyObject *text, Py_ssize_t start, Py_ssize_t need) {
    Py_ssize_t size = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    /* At most need + 1 characters (a space and the character after it go in together), and never more
     * than the input: each space stands for at least one whitespace character. */
    Py_ssize_t room = size - start < need + 1 ? size - start : need + 1;
    void *out = PyMem_Malloc((size_t)(room + 1) * (size_t)kind);
    if (out == NULL) return PyErr_NoMemory();
    Py_ssize_t n = 0, i = start;
    int gap = 0;
    while (n < need && i < size) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i++);
        if (is_control(c)) continue;
        if (Py_UNICODE_ISSPACE(c)) {
            gap = n > 0;
            continue;
        }
        if (gap) {
            PyUnicode_WRITE(kind, out, n++, ' ');
            gap = 0;
        }
        PyUnicode_WRITE(kind, out, n++, c);
    }
    return result_pair(kind, out, n, !kept_ahead(kind, data, i, size));
}

static PyObject *clean_tail(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t end, need;
    if (clean_args(args, nargs, "clean_tail", &end, &need) < 0) return NULL;
    return cleaned_tail(args[0], end, need);
}

static PyObject *cleaned_tail(PyObject *text, Py_ssize_t end, Py_ssize_t need) {
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    /* Built backwards: each kept character, after a space when whitespace separated it from what follows. */
    Py_ssize_t cap = (end < need + 1 ? end : need + 1) + 1;
    void *rev = PyMem_Malloc((size_t)cap * (size_t)kind);
    if (rev == NULL) return PyErr_NoMemory();
    Py_ssize_t n = 0, i = end;
    int gap = 0;
    while (n < need && i > 0) {
        Py_UCS4 c = PyUnicode_READ(kind, data, --i);
        if (is_control(c)) continue;
        if (Py_UNICODE_ISSPACE(c)) {
            gap = 1;
            continue;
        }
        if (gap) {
            PyUnicode_WRITE(kind, rev, n++, ' ');
            gap = 0;
        }
        PyUnicode_WRITE(kind, rev, n++, c);
    }
    int from_start = !kept_behind(kind, data, i);
    for (Py_ssize_t a = 0, b = n - 1; a < b; a++, b--) {
        Py_UCS4 t = PyUnicode_READ(kind, rev, a);
        PyUnicode_WRITE(kind, rev, a, PyUnicode_READ(kind, rev, b));
        PyUnicode_WRITE(kind, rev, b, t);
    }
    return result_pair(kind, rev, n, from_start);
}

static PyObject *word_end_of(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "word_end(text, at) takes a str and an int");
        return NULL;
    }
    Py_ssize_t at = PyLong_AsSsize_t(args[1]);
    if (at == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t size = PyUnicode_GET_LENGTH(args[0]);
    if (at < 0 || at > size) {
        PyErr_SetString(PyExc_ValueError, "word_end: at must be within the text");
        return NULL;
    }
    return PyLong_FromSsize_t(word_end(PyUnicode_KIND(args[0]), PyUnicode_DATA(args[0]), size, at));
}

/* -- snippet spans: the shrink rounds' arithmetic (scopegate.search.snippet.snippet_span) ------------ */

#define ELLIPSIS_CHAR 0x2026

/* Python's floor division for a positive divisor. */
static Py_ssize_t floor_div(Py_ssize_t a, Py_ssize_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/* cap_span(text, start, limit): the end of text[start:] cut to limit characters, and whether an
 * ellipsis follows (snippet.cap_span: the last space in the first limit - 1 characters when it is at
 * least half way, then trailing whitespace dropped). */
static Py_ssize_t cap_end(int kind, const void *data, Py_ssize_t len, Py_ssize_t start, Py_ssize_t limit,
                          int *tail) {
    if (len - start <= limit) {
        *tail = 0;
        return len;
    }
    if (limit <= 1) {
        *tail = limit == 1;
        return start;
    }
    Py_ssize_t end = start + limit - 1, space = -1;
    for (Py_ssize_t i = end - 1; i >= start; i--) {
        if (PyUnicode_READ(kind, data, i) == ' ') {
            space = i;
            break;
        }
    }
    if (space >= 0 && space - start >= limit / 2) end = space;
    while (end > start && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, end - 1))) end--;
    *tail = 1;
    return end;
}

typedef struct {
    PyObject *text; /* borrowed */
    Py_ssize_t start, end;
    int lead, tail; /* an ellipsis before / after text[start:end] */
} Span;

/* snippet_span(source, limit) for a SnippetSource (limit, head, head_whole, local, at,
 * before_from_start, after_whole); 0 on success, -1 with an exception set. */
static int span_of(PyObject *source, Py_ssize_t limit, Span *out) {
    if (!PyTuple_Check(source) || PyTuple_GET_SIZE(source) < 7) {
        PyErr_SetString(PyExc_TypeError, "a snippet source is a SnippetSource");
        return -1;
    }
    Py_ssize_t prepared = PyLong_AsSsize_t(PyTuple_GET_ITEM(source, 0));
    if (prepared == -1 && PyErr_Occurred()) return -1;
    if (limit > prepared) {
        PyErr_Format(PyExc_ValueError, "prepared for snippets of up to %zd characters, not %zd", prepared, limit);
        return -1;
    }
    PyObject *head = PyTuple_GET_ITEM(source, 1), *local = PyTuple_GET_ITEM(source, 3);
    PyObject *at_obj = PyTuple_GET_ITEM(source, 4);
    if (!PyUnicode_Check(head) || !PyUnicode_Check(local)) {
        PyErr_SetString(PyExc_TypeError, "a snippet source's texts are str");
        return -1;
    }
    int head_whole = PyObject_IsTrue(PyTuple_GET_ITEM(source, 2));
    if (head_whole < 0) return -1;
    out->lead = 0;
    if (head_whole && PyUnicode_GET_LENGTH(head) <= limit) {
        out->text = head;
        out->start = 0;
        out->end = PyUnicode_GET_LENGTH(head);
        out->tail = 0;
        return 0;
    }
    if (at_obj == Py_None) {
        out->text = head;
        out->start = 0;
        out->end = cap_end(PyUnicode_KIND(head), PyUnicode_DATA(head), PyUnicode_GET_LENGTH(head), 0, limit, &out->tail);
        return 0;
    }
    Py_ssize_t at = PyLong_AsSsize_t(at_obj);
    if (at == -1 && PyErr_Occurred()) return -1;
    int from_start = PyObject_IsTrue(PyTuple_GET_ITEM(source, 5));
    if (from_start < 0) return -1;
    int kind = PyUnicode_KIND(local);
    const void *data = PyUnicode_DATA(local);
    Py_ssize_t len = PyUnicode_GET_LENGTH(local), context = floor_div(limit, 5), start = at - context;
    int opened = 1;
    if (from_start) {
        if (start < 0) start = 0;
        opened = start > 0;
    }
    if (start < 0 || at > len) { /* prepare never makes these: refuse rather than guess at Python's indexing */
        PyErr_SetString(PyExc_ValueError, "a snippet source's match lies outside its text");
        return -1;
    }
    out->text = local;
    if (!opened) {
        out->start = start;
        out->end = cap_end(kind, data, len, start, limit, &out->tail);
        return 0;
    }
    for (Py_ssize_t i = start; i < at; i++) { /* move forward to a word start */
        if (PyUnicode_READ(kind, data, i) == ' ') {
            start = i + 1;
            break;
        }
    }
    out->lead = 1;
    out->start = start;
    out->end = cap_end(kind, data, len, start, limit - 1, &out->tail);
    return 0;
}

/* Characters the span gives as a JSON string's content: quotes and backslashes are escaped. */
static Py_ssize_t span_size(const Span *span) {
    int kind = PyUnicode_KIND(span->text);
    const void *data = PyUnicode_DATA(span->text);
    Py_ssize_t size = span->lead + (span->end - span->start) + span->tail;
    for (Py_ssize_t i = span->start; i < span->end; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        size += c == '"' || c == '\\';
    }
    return size;
}

/* sources: a list or tuple (PySequence_Fast). */
static Py_ssize_t sources_size(PyObject *sources, Py_ssize_t limit) {
    Py_ssize_t total = 0, n = PySequence_Fast_GET_SIZE(sources);
    for (Py_ssize_t k = 0; k < n; k++) {
        Span span;
        if (span_of(PySequence_Fast_GET_ITEM(sources, k), limit, &span) < 0) return -1;
        total += span_size(&span);
    }
    return total;
}

static int parse_ssizes(PyObject *const *args, Py_ssize_t from, Py_ssize_t count, Py_ssize_t *out) {
    for (Py_ssize_t k = 0; k < count; k++) {
        out[k] = PyLong_AsSsize_t(args[from + k]);
        if (out[k] == -1 && PyErr_Occurred()) return -1;
    }
    return 0;
}

/* The arguments of the three functions below: a sequence of sources, then `count` ints into `out`.
 * Returns the sources as a fast sequence (a new reference), or NULL with an exception set. */
static PyObject *sources_args(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t count, Py_ssize_t *out,
                              const char *usage) {
    if (nargs != count + 1) {
        PyErr_Format(PyExc_TypeError, "%s takes a sequence and %zd int(s)", usage, count);
        return NULL;
    }
    if (parse_ssizes(args, 1, count, out) < 0) return NULL;
    return PySequence_Fast(args[0], "the snippet sources must be a sequence");
}

/* snippets_size(sources, limit) -> int */
static PyObject *snippets_size(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t limit;
    PyObject *sources = sources_args(args, nargs, 1, &limit, "snippets_size(sources, limit)");
    if (sources == NULL) return NULL;
    Py_ssize_t total = sources_size(sources, limit);
    Py_DECREF(sources);
    return total < 0 ? NULL : PyLong_FromSsize_t(total);
}

/* shrink_limit(sources, base, budget, limit, size, floor) -> (limit, size) */
static PyObject *shrink_limit(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t v[5];
    PyObject *sources = sources_args(args, nargs, 5, v, "shrink_limit(sources, base, budget, limit, size, floor)");
    if (sources == NULL) return NULL;
    Py_ssize_t base = v[0], budget = v[1], limit = v[2], size = v[3], floor = v[4];
    Py_ssize_t n = PySequence_Fast_GET_SIZE(sources);
    while (size > budget && limit > floor) {
        Py_ssize_t step = (size - budget) / (n > 1 ? n : 1) + 1;
        limit -= step > 20 ? step : 20;
        if (limit < floor) limit = floor;
        Py_ssize_t sizes = sources_size(sources, limit);
        if (sizes < 0) {
            Py_DECREF(sources);
            return NULL;
        }
        size = base + sizes;
    }
    Py_DECREF(sources);
    return Py_BuildValue("(nn)", limit, size);
}

/* cut_snippets(sources, limit) -> list[str]: each snippet cut once (the text itself when it is whole). */
static PyObject *cut_snippets(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t limit;
    PyObject *sources = sources_args(args, nargs, 1, &limit, "cut_snippets(sources, limit)");
    if (sources == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(sources);
    PyObject *out = PyList_New(n);
    if (out == NULL) {
        Py_DECREF(sources);
        return NULL;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        Span span;
        if (span_of(PySequence_Fast_GET_ITEM(sources, k), limit, &span) < 0) {
            Py_DECREF(out);
            Py_DECREF(sources);
            return NULL;
        }
        PyObject *piece;
        Py_ssize_t len = PyUnicode_GET_LENGTH(span.text);
        if (!span.lead && !span.tail) {
            piece = span.start == 0 && span.end == len ? Py_NewRef(span.text)
                                                       : PyUnicode_Substring(span.text, span.start, span.end);
        } else {
            /* The narrowest kind that holds the slice and the ellipsis: Python compares strings of
             * different kinds as unequal, so a wider one than needed would be a different string. */
            int kind = PyUnicode_KIND(span.text);
            const void *data = PyUnicode_DATA(span.text);
            Py_UCS4 widest = ELLIPSIS_CHAR;
            for (Py_ssize_t i = span.start; i < span.end; i++) {
                Py_UCS4 c = PyUnicode_READ(kind, data, i);
                if (c > widest) widest = c;
            }
            piece = PyUnicode_New(span.lead + (span.end - span.start) + span.tail, widest);
            if (piece != NULL) {
                int out_kind = PyUnicode_KIND(piece);
                void *out_data = PyUnicode_DATA(piece);
                Py_ssize_t w = 0;
                if (span.lead) PyUnicode_WRITE(out_kind, out_data, w++, ELLIPSIS_CHAR);
                for (Py_ssize_t i = span.start; i < span.end; i++)
                    PyUnicode_WRITE(out_kind, out_data, w++, PyUnicode_READ(kind, data, i));
                if (span.tail) PyUnicode_WRITE(out_kind, out_data, w, ELLIPSIS_CHAR);
            }
        }
        if (piece == NULL) {
            Py_DECREF(out);
            Py_DECREF(sources);
            return NULL;
        }
        PyList_SET_ITEM(out, k, piece);
    }
    Py_DECREF(sources);
    return out;
}

static PyMethodDef METHODS[] = {
    {"word_end", (PyCFunction)(void (*)(void))word_end_of, METH_FASTCALL,
     "word_end(text, at) -> int: where the run of word characters from text[at] ends (see _wordscan.c)"},
    {"clean_head", (PyCFunction)(void (*)(void))clean_head, METH_FASTCALL,
     "clean_head(text, start, need) -> (str, bool): see scopegate/search/_wordscan.c"},
    {"clean_tail", (PyCFunction)(void (*)(void))clean_tail, METH_FASTCALL,
     "clean_tail(text, end, need) -> (str, bool): see scopegate/search/_wordscan.c"},
    {"word_runs", (PyCFunction)word_runs, METH_O,
     "word_runs(text) -> str: the runs of word characters joined by one space (see _wordscan.c)"},
    {"first_start", (PyCFunction)(void (*)(void))first_start, METH_FASTCALL,
     "first_start(text, needles, start, known_misses=None, word_terms=None, wanted=None) -> int: "
     "see scopegate/search/_wordscan.c"},
    {"first_window", (PyCFunction)(void (*)(void))first_window, METH_FASTCALL,
     "first_window(text, needles, start, known_misses, word_terms, wanted, before_need, after_need) "
     "-> int | (int, (str, bool), (str, bool)): see scopegate/search/_wordscan.c"},
    {"snippets_size", (PyCFunction)(void (*)(void))snippets_size, METH_FASTCALL,
     "snippets_size(sources, limit) -> int: sum of snippet_size over the sources (see _wordscan.c)"},
    {"shrink_limit", (PyCFunction)(void (*)(void))shrink_limit, METH_FASTCALL,
     "shrink_limit(sources, base, budget, limit, size, floor) -> (limit, size): the shrink rounds"},
    {"cut_snippets", (PyCFunction)(void (*)(void))cut_snippets, METH_FASTCALL,
     "cut_snippets(sources, limit) -> list[str]: snippet() of each source (see _wordscan.c)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_wordscan", NULL, 0, METHODS};

PyMODINIT_FUNC PyInit__wordscan(void) {
    IS_WORD[128] = 0;
    for (int c = 0; c < 128; c++) {
        LOWER[c] = (c >= 'A' && c <= 'Z') ? (unsigned char)(c + 32) : (unsigned char)c;
        IS_WORD[c] = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    }
    for (Py_UCS4 c = 0; c < LOW_CLASS_SIZE; c++) LOW_CLASS[c] = (unsigned char)table_class(c);
    return PyModule_Create(&MODULE);
}
