/* Where the first word that may match a query term starts, read straight from a Python str.
 *
 * scopegate.search.snippet.TermFinder needs the first place in a raw body where an ASCII needle
 * (a query term minus its last character, lowercase) occurs case-insensitively with no ASCII word
 * character just before it. In Python that costs a lowered copy of the body and one search per
 * needle (about 3 ns per character on a 30 KB ticket); here it is one pass over the string's own
 * storage (1, 2 or 4 bytes per character) with no copy. No library offers this: regex engines
 * either need a lowered copy or are slower case-insensitively (RE2 and `regex` were measured),
 * and Aho-Corasick packages are case-sensitive. The pure-Python path stays the fallback and the
 * reference (tests/unit/test_wordscan.py holds both to the same answers).
 *
 * word_runs(text) -> str
 *   The words of text (as the engines' \w finds them; scripts/gen_word_marks.py has the rule and
 *   generates the tables in _word_marks.h), joined by one space, for tantivy's whitespace
 *   tokenizer to split again. tantivy's regex tokenizer costs about 0.2 ms per 3 KB ticket in its per-token
 *   regex calls; this pass and the whitespace split together cost a fifth of that (issue 13). The
 *   Python fallback is " ".join(WORD_RE.findall(text)) (scopegate.search.analysis), the same string.
 *
 * first_start(text, needles, start) -> int
 *   needles: tuple of 1..64 non-empty lowercase ASCII bytes objects.
 *   Returns the smallest i >= start where some needle starts, case-insensitively over ASCII,
 *   and text[i - 1] (if i > 0) is not an ASCII letter, digit or underscore; -1 if there is none;
 *   -2 if a character whose lowercase is ASCII but which is not ASCII itself (U+0130, U+212A)
 *   comes first: the caller's Unicode-aware path decides from there.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_word_marks.h"

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
                uint64_t mask = nd->by_first[LOWER[c]];                                   \
                while (mask) {                                                            \
                    int k = __builtin_ctzll(mask);                                        \
                    mask &= mask - 1;                                                     \
                    Py_ssize_t n = nd->len[k];                                            \
                    if (i + n > size) continue;                                           \
                    const char *s = nd->bytes[k];                                         \
                    Py_ssize_t j = 1;                                                     \
                    for (; j < n; j++) {                                                  \
                        Py_UCS4 d = data[i + j];                                          \
                        if (d >= 128 || LOWER[d] != (unsigned char)s[j]) break;           \
                    }                                                                     \
                    if (j == n) return i;                                                 \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
        return -1;                                                                        \
    }

SCAN(Py_UCS1)
SCAN(Py_UCS2)
SCAN(Py_UCS4)

static Py_ssize_t scan(int kind, const void *data, Py_ssize_t size, Py_ssize_t start, const Needles *nd) {
    unsigned char first[129]; /* 1 where this character, lowercased, begins some needle */
    for (int c = 0; c < 128; c++) first[c] = nd->by_first[LOWER[c]] != 0;
    first[128] = 0;
    switch (kind) {
        case PyUnicode_1BYTE_KIND: return scan_Py_UCS1((const Py_UCS1 *)data, size, start, nd, first);
        case PyUnicode_2BYTE_KIND: return scan_Py_UCS2((const Py_UCS2 *)data, size, start, nd, first);
        default: return scan_Py_UCS4((const Py_UCS4 *)data, size, start, nd, first);
    }
}

static PyObject *first_start(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "first_start(text, needles, start) takes 3 arguments");
        return NULL;
    }
    PyObject *text = args[0], *tuple = args[1];
    if (!PyUnicode_Check(text) || !PyTuple_Check(tuple)) {
        PyErr_SetString(PyExc_TypeError, "first_start: text must be str and needles a tuple of bytes");
        return NULL;
    }
    Py_ssize_t start = PyLong_AsSsize_t(args[2]);
    if (start == -1 && PyErr_Occurred()) return NULL;
    Needles nd;
    memset(nd.by_first, 0, sizeof nd.by_first);
    nd.count = PyTuple_GET_SIZE(tuple);
    if (nd.count < 1 || nd.count > MAX_NEEDLES) {
        PyErr_SetString(PyExc_ValueError, "first_start: between 1 and 64 needles");
        return NULL;
    }
    for (Py_ssize_t k = 0; k < nd.count; k++) {
        PyObject *item = PyTuple_GET_ITEM(tuple, k);
        if (!PyBytes_Check(item) || PyBytes_GET_SIZE(item) < 1) {
            PyErr_SetString(PyExc_TypeError, "first_start: each needle must be non-empty bytes");
            return NULL;
        }
        const char *s = PyBytes_AS_STRING(item);
        Py_ssize_t n = PyBytes_GET_SIZE(item);
        for (Py_ssize_t j = 0; j < n; j++) {
            unsigned char u = (unsigned char)s[j];
            if (u >= 128 || LOWER[u] != u) {
                PyErr_SetString(PyExc_ValueError, "first_start: needles must be lowercase ASCII");
                return NULL;
            }
        }
        nd.bytes[k] = s;
        nd.len[k] = n;
        nd.by_first[(unsigned char)s[0]] |= (uint64_t)1 << k;
    }
    Py_ssize_t size = PyUnicode_GET_LENGTH(text);
    if (start < 0) start = 0;
    if (start >= size) return PyLong_FromSsize_t(-1);
    const void *data = PyUnicode_DATA(text);
    int kind = PyUnicode_KIND(text);
    Py_ssize_t found;
    /* The scan reads immutable str storage only, so other threads may run meanwhile; but handing
     * the GIL over costs more than scanning a ticket, so only very long texts let go of it. */
    if (size - start > RELEASE_GIL_CHARS) {
        Py_BEGIN_ALLOW_THREADS
        found = scan(kind, data, size, start, &nd);
        Py_END_ALLOW_THREADS
    } else {
        found = scan(kind, data, size, start, &nd);
    }
    return PyLong_FromSsize_t(found);
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

/* What a non-ASCII character is to a word (scripts/gen_word_marks.py says why): 2 starts or
 * continues one, 1 only continues one (marks, ZWNJ/ZWJ), 0 ends it. */
static int word_class(Py_UCS4 c) {
    if (Py_UNICODE_ISALNUM(c)) return in_ranges(c, OTHER_NUMBERS, OTHER_NUMBERS_COUNT) ? 0 : 2;
    if (in_ranges(c, WORD_MARKS, WORD_MARKS_COUNT)) return 1;
    return in_ranges(c, WORD_CONNECTORS, WORD_CONNECTORS_COUNT) ? 2 : 0;
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

static PyMethodDef METHODS[] = {
    {"word_runs", (PyCFunction)word_runs, METH_O,
     "word_runs(text) -> str: the runs of word characters joined by one space (see _wordscan.c)"},
    {"first_start", (PyCFunction)(void (*)(void))first_start, METH_FASTCALL,
     "first_start(text, needles, start) -> int: see scopegate/search/_wordscan.c"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_wordscan", NULL, 0, METHODS};

PyMODINIT_FUNC PyInit__wordscan(void) {
    IS_WORD[128] = 0;
    for (int c = 0; c < 128; c++) {
        LOWER[c] = (c >= 'A' && c <= 'Z') ? (unsigned char)(c + 32) : (unsigned char)c;
        IS_WORD[c] = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    }
    return PyModule_Create(&MODULE);
}
