/* tok_pre: the pre-tokenizers of byte-level BPE ("gpt2") vocabularies, as
 * llama.cpp chooses them by tokenizer.ggml.pre (llama-vocab.cpp) and runs
 * them (unicode.cpp's unicode_regex_split). Owns the table of
 * pre-tokenizers, the Unicode classes of code points (unicode_tables.h,
 * Unicode 15.1 as llama.cpp's), the hand-written splitters llama.cpp uses
 * for four patterns, and the pipeline that splits a fragment of text into
 * the pre-tokens BPE merges one by one.
 *
 * A pre-tokenizer is a list of llama.cpp's regular expressions, copied
 * verbatim below from llama-vocab.cpp (llama.cpp as in node-llama-cpp
 * 3.22.1, commit de3ff81), applied one after the other: each splits every
 * piece the previous left into its matches and the text between them
 * (std::regex_iterator over the piece). Where llama.cpp has a hand-written
 * splitter for a pattern (GPT-2's, Llama 3's, Qwen 2's, Qwen 3.5's and
 * "[^\n]+|[\n]+") it runs that instead of the pattern, and so does this
 * file, ported statement for statement (they differ from the patterns in
 * corners, and llama.cpp's ids come from them). Every other pattern runs
 * in tok_regex.c's engine over the symbols llama.cpp's std::regex sees:
 *   - a pattern with \p{..} runs over the "collapsed" text: ASCII as is,
 *     a non-ASCII code point as one byte for its class (0x0B whitespace,
 *     0xD1 number, 0xD2 letter, 0xD3 punctuation, 0xD4 mark, 0xD5 symbol,
 *     0xD0 anything else), with each \p{X} rewritten to that byte plus
 *     X's ASCII members (collapse_regex, as llama.cpp rewrites it);
 *   - a pattern without runs over the code points (std::wregex), with
 *     non-ASCII whitespace turned into 0x0B as llama.cpp does.
 * So a non-ASCII upper-case letter is "not [a-z]" and "not [A-Z]" alike
 * (tekken, gpt-4o), exactly as in llama.cpp.
 *
 * Text that is not UTF-8: llama.cpp reads each bad byte as U+FFFD (a
 * symbol); here such a byte is classed as that symbol too, but its own
 * byte is what gets encoded (tokenizer.c keeps decode(encode(x)) == x), so
 * only for invalid UTF-8 can ids differ from llama.cpp's.
 *
 * Not implemented (treated as unknown names: GPT-2's split with a warning,
 * see tok_vocab.c): kimi-k2,
 * afmoe, tiny_aya/cohere2moe and superbpe (llama.cpp special-cases their
 * digit and Han rules in code of their own), and gemma4, sarvam-moe and
 * whitespace, which are not byte-level BPE. */
#include "tokenizer_internal.h"

#include <stdio.h>
#include <string.h>

#include "unicode_tables.h"

/* ---------------------------------------------------------------- the table */

/* llama.cpp's regex_exprs per pre-tokenizer type (llm_tokenizer_bpe). */
static const char *const RX_LLAMA3[] = {
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL,
};

static const char *const RX_JAIS2[] = {
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}",
    NULL,
};

static const char *const RX_DEEPSEEK_LLM[] = {
    "[\r\n]",
    "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
    "\\s?[!-/:-~！-／：-～‘-‟　-。]+",
    "\\s+$",
    "[一-龥ࠀ-一가-퟿]+",
    "\\p{N}+",
    NULL,
};

static const char *const RX_DEEPSEEK3_LLM[] = {
    "\\p{N}{1,3}",
    "[一-龥぀-ゟ゠-ヿ]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
    NULL,
};

static const char *const RX_SPARK2_5[] = {
    "\\p{N}{1,3}",
    "[一-龥぀-ゟ゠-ヿ]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+|[\r\n]|\\s+(?!\\S)|\\s+",
    "\\p{N}",
    NULL,
};

static const char *const RX_YOUTU[] = {
    "[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+",
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL,
};

static const char *const RX_DEEPSEEK_CODER[] = {
    "[\r\n]",
    "\\s?\\p{L}+",
    "\\s?\\p{P}+",
    "[一-龥ࠀ-一가-퟿]+",
    "\\p{N}",
    NULL,
};

static const char *const RX_FALCON[] = {
    "[\\p{P}\\$\\+<=>\\^~\\|`]+",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    "[0-9][0-9][0-9]",
    NULL,
};

static const char *const RX_STARCODER[] = {
    "\\p{N}",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    NULL,
};

static const char *const RX_GPT2[] = {
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    NULL,
};

static const char *const RX_QWEN2[] = {
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL,
};

static const char *const RX_QWEN35[] = {
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL,
};

static const char *const RX_PORO[] = {
    " ?[^(\\s|.,!?…。，、।۔،)]+",
    NULL,
};

static const char *const RX_VIKING[] = {
    " ?[^(\\s|.,!?…。，、।۔،)]+",
    "\\p{N}",
    NULL,
};

static const char *const RX_TEKKEN[] = {
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL,
};

static const char *const RX_CHAMELEON[] = {
    "<sentinel:[0-9]+>",
    "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
    "([\\t\\n]|    |  )",
    "\\p{N}",
    "[\\p{P}!-/:-@\\[-`{-~]",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    NULL,
};

static const char *const RX_GPT4O[] = {
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL,
};

static const char *const RX_GRANITE_EMB_MULTI[] = {
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))+((?=[\\p{L}\\p{M}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL,
};

static const char *const RX_BAILINGMOE[] = {
    "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
    NULL,
};

static const char *const RX_SEED_CODER[] = {
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL,
};

static const char *const RX_UFAKZEKA[] = {
    "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL,
};

static const char *const RX_LAGUNA[] = {
    "[^\\n]+|[\\n]+",
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL,
};

static const char *const RX_EXAONE_MOE[] = {
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
    NULL,
};

static const char *const RX_MINICPM5[] = {
    "\\p{N}{1,3}",
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL,
};

static const char *const RX_DEFAULT[] = {
    "[\\p{P}\\$\\+<=>\\^~\\|]+",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    "\\p{N}+",
    "[0-9][0-9][0-9]",
    NULL,
};

static const as_tok_pre PRES[] = {
    {"llama3", {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"}, RX_LLAMA3, true, true},
    {"jais2", {"jais-2"}, RX_JAIS2, false, false},
    {"dbrx", {"dbrx"}, RX_LLAMA3, false, false},
    {"smaug", {"smaug-bpe"}, RX_LLAMA3, false, false},
    {"deepseek_llm", {"deepseek-llm"}, RX_DEEPSEEK_LLM, false, false},
    {"deepseek3_llm", {"deepseek-v3"}, RX_DEEPSEEK3_LLM, false, false},
    {"hunyuan_dense", {"hunyuan-dense"}, RX_DEEPSEEK3_LLM, false, false},
    {"joyai_llm", {"joyai-llm"}, RX_DEEPSEEK3_LLM, false, false},
    {"hy_v4", {"hy_v4"}, RX_DEEPSEEK3_LLM, false, false},
    {"spark2_5", {"spark2_5"}, RX_SPARK2_5, false, false},
    {"youtu", {"youtu"}, RX_YOUTU, true, false},
    {"deepseek_coder", {"deepseek-coder"}, RX_DEEPSEEK_CODER, false, false},
    {"falcon", {"falcon"}, RX_FALCON, false, false},
    {"starcoder", {"starcoder"}, RX_STARCODER, false, false},
    {"refact", {"refact"}, RX_STARCODER, false, false},
    {"command_r", {"command-r"}, RX_STARCODER, false, false},
    {"smollm", {"smollm"}, RX_STARCODER, false, false},
    {"codeshell", {"codeshell"}, RX_STARCODER, false, false},
    {"exaone", {"exaone"}, RX_STARCODER, false, false},
    {"minerva", {"minerva-7b"}, RX_STARCODER, false, false},
    {"mellum2", {"mellum2"}, RX_STARCODER, false, false},
    {"gpt2", {"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum", "modern-bert", "jina-v1-en", "jina-v2-code", "roberta-bpe", "exaone4"}, RX_GPT2, false, false},
    {"mpt", {"mpt"}, RX_GPT2, false, false},
    {"olmo", {"olmo"}, RX_GPT2, false, false},
    {"jais", {"jais"}, RX_GPT2, false, false},
    {"trillion", {"trillion"}, RX_GPT2, false, false},
    {"granite_docling", {"granite-docling"}, RX_GPT2, false, false},
    {"stablelm2", {"stablelm2"}, RX_QWEN2, false, false},
    {"qwen2", {"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez"}, RX_QWEN2, false, false},
    {"hunyuan", {"hunyuan"}, RX_QWEN2, false, false},
    {"solar_open", {"solar-open"}, RX_QWEN2, false, false},
    {"qwen35", {"qwen35"}, RX_QWEN35, false, false},
    {"poro", {"poro-chat"}, RX_PORO, false, false},
    {"bloom", {"bloom"}, RX_PORO, false, false},
    {"gpt3_finnish", {"gpt3-finnish"}, RX_PORO, false, false},
    {"chatglm4", {"glm4", "chatglm-bpe"}, RX_LLAMA3, false, false},
    {"viking", {"viking"}, RX_VIKING, false, false},
    {"tekken", {"tekken"}, RX_TEKKEN, true, true},
    {"chameleon", {"chameleon"}, RX_CHAMELEON, false, true},
    {"gpt4o", {"gpt-4o", "llama4", "kanana2", "talkie"}, RX_GPT4O, false, false},
    {"minimax_m2", {"minimax-m2"}, RX_GPT4O, false, false},
    {"granite_emb_multi", {"granite-embed-multi-97m"}, RX_GRANITE_EMB_MULTI, true, false},
    {"bailingmoe", {"bailingmoe", "bailingmoe2", "llada-moe"}, RX_BAILINGMOE, false, false},
    {"seed_coder", {"seed-coder"}, RX_SEED_CODER, false, false},
    {"ufakzeka", {"ufakzeka"}, RX_UFAKZEKA, false, false},
    {"grok_2", {"grok-2"}, RX_QWEN2, false, false},
    {"laguna", {"laguna"}, RX_LAGUNA, false, false},
    {"exaone_moe", {"exaone-moe"}, RX_EXAONE_MOE, false, false},
    {"minicpm5", {"minicpm5"}, RX_MINICPM5, true, false},
    {"default", {"default"}, RX_DEFAULT, false, false},
};

#define N_PRES (sizeof PRES / sizeof PRES[0])

const as_tok_pre *as_tok_pre_find(const char *name)
{
    for (size_t i = 0; i < N_PRES; i++)
        for (size_t k = 0; k < AS_TOK_PRE_NAMES && PRES[i].names[k]; k++)
            if (strcmp(PRES[i].names[k], name) == 0)
                return &PRES[i];
    return NULL;
}

const char *as_tokenizer_pre_for_splits(const char *const *regexes, size_t n)
{
    for (size_t i = 0; i < N_PRES; i++) {
        size_t k = 0;
        while (k < n && PRES[i].regex[k] && strcmp(PRES[i].regex[k], regexes[k]) == 0)
            k++;
        if (k == n && !PRES[i].regex[k])
            return PRES[i].names[0];
    }
    return NULL;
}

const as_tok_pre *as_tok_pre_type(const char *type)
{
    for (size_t i = 0; i < N_PRES; i++)
        if (strcmp(PRES[i].type, type) == 0)
            return &PRES[i];
    return NULL;
}


/* ---------------------------------------------------------------- code point classes */

/* Invalid bytes get a code point past U+10FFFF, classed as U+FFFD is. */
#define CP_INVALID 0xFFFFFFFFu

bool as_tok_in_ranges(const uint32_t (*r)[2], size_t n, uint32_t cp)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < r[mid][0])
            hi = mid;
        else if (cp > r[mid][1])
            lo = mid + 1;
        else
            return true;
    }
    return false;
}

static unsigned uni_class(uint32_t cp)
{
    if (cp > 0x10FFFF)
        cp = 0xFFFD;
    size_t lo = 0, hi = sizeof as_uni_class / sizeof as_uni_class[0];
    while (hi - lo > 1) { /* the last range starting at or before cp */
        size_t mid = lo + (hi - lo) / 2;
        if (as_uni_class[mid][0] <= cp)
            lo = mid;
        else
            hi = mid;
    }
    return as_uni_class[lo][1];
}

static bool uni_space(uint32_t cp)
{
    return cp <= 0x10FFFF && as_tok_in_ranges(as_uni_space, sizeof as_uni_space / sizeof as_uni_space[0], cp);
}

unsigned as_tok_uni_class(uint32_t cp) { return uni_class(cp); }
bool as_tok_uni_space(uint32_t cp) { return uni_space(cp); }

DEFINE_RESERVE(reserve_cpinfo, as_tok_cp)
DEFINE_RESERVE(reserve_u32, uint32_t)
DEFINE_RESERVE(reserve_size, size_t)

int as_tok_decode_cps(const char *s, size_t n, work *w, size_t *m, as_error *err)
{
    if (!reserve_cpinfo(&w->cps, &w->capcps, n + 1))
        return as_tok_oom(err);
    const uint8_t *u = (const uint8_t *)s;
    size_t k = 0;
    for (size_t i = 0; i < n; k++) {
        uint32_t cp;
        size_t c = as_tok_utf8_char(u + i, n - i, &cp);
        if (!c)
            cp = CP_INVALID, c = 1;
        w->cps[k] = (as_tok_cp){cp, (uint32_t)i, (uint8_t)uni_class(cp), uni_space(cp)};
        i += c;
    }
    w->cps[k] = (as_tok_cp){0, (uint32_t)n, 0, false}; /* piece [a, b) ends at cps[b].off */
    *m = k;
    return AS_OK;
}

/* ---------------------------------------------------------------- hand-written splitters */

/* One piece [ini, end) of code points, with llama.cpp's accessors: past
 * the piece a code point reads OUT (and its flags none). */
typedef struct span {
    const as_tok_cp *c;
    size_t ini, end, prev; /* prev: the end of the last pre-token */
    work *w;
} span;

#define OUT 0xFFFFFFFFu
enum { F_L = 1, F_N = 2, F_WS = 4, F_M = 8, F_IN = 16 }; /* F_IN: inside the piece */

static uint32_t cpt(const span *s, size_t pos)
{
    return pos >= s->ini && pos < s->end ? s->c[pos].cp : OUT;
}

static unsigned flags(const span *s, size_t pos)
{
    if (pos < s->ini || pos >= s->end)
        return 0;
    const as_tok_cp *c = &s->c[pos];
    return F_IN | (c->cls == AS_UC_LETTER ? F_L : 0) | (c->cls == AS_UC_NUMBER ? F_N : 0) |
           (c->ws ? F_WS : 0) | (c->cls == AS_UC_MARK ? F_M : 0);
}

/* _add_token: a pre-token ends at end; its length (0: nothing added). */
static int add_token(span *s, size_t end, size_t *len)
{
    *len = end - s->prev;
    s->prev = end;
    if (*len && !reserve_size(&s->w->pieces2, &s->w->cappieces2, s->w->npieces2 + 1))
        return AS_ERR;
    if (*len)
        s->w->pieces2[s->w->npieces2++] = end;
    return AS_OK;
}

static uint32_t lower_ascii(uint32_t c)
{
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* 's|'t|'re|'ve|'m|'ll|'d at pos (case-insensitive when icase, as
 * unicode_tolower: only ASCII letters lower-case to these): its end, or 0. */
static size_t contraction(const span *s, size_t pos, bool icase)
{
    if (cpt(s, pos) != '\'' || pos + 1 >= s->end)
        return 0;
    uint32_t a = cpt(s, pos + 1);
    a = icase ? lower_ascii(a) : a;
    if (a == 's' || a == 't' || a == 'm' || a == 'd')
        return pos + 2;
    if (pos + 2 >= s->end)
        return 0;
    uint32_t b = cpt(s, pos + 2);
    b = icase ? lower_ascii(b) : b;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
        return pos + 3;
    return 0;
}

/* GPT-2's 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
 * as unicode_regex_split_custom_gpt2. */
static int split_gpt2(span *s)
{
    size_t len;
    for (size_t pos = s->ini; pos < s->end;) {
        uint32_t c = cpt(s, pos);
        unsigned f = flags(s, pos);
        size_t e = contraction(s, pos, false);
        if (e) {
            if (add_token(s, e, &len))
                return AS_ERR;
            pos += len;
            continue;
        }
        unsigned f2 = c == ' ' ? flags(s, pos + 1) : f;
        if (f2 & (F_L | F_N)) { /* <space>?\p{L}+ and <space>?\p{N}+ */
            unsigned k = f2 & F_L ? F_L : F_N;
            pos += c == ' ';
            while (f2 & k)
                f2 = flags(s, ++pos);
            if (add_token(s, pos, &len))
                return AS_ERR;
            continue;
        }
        if (!(f2 & (F_WS | F_L | F_N)) && f2) { /* <space>?[^\s\p{L}\p{N}]+ */
            pos += c == ' ';
            while (!(f2 & (F_WS | F_L | F_N)) && f2)
                f2 = flags(s, ++pos);
            if (add_token(s, pos, &len))
                return AS_ERR;
            continue;
        }
        size_t ws = 0;
        while (flags(s, pos + ws) & F_WS)
            ws++;
        if (ws > 1 && cpt(s, pos + ws) != OUT) /* \s+(?!\S) */
            pos += ws - 1;
        else /* \s+, or no match: one code point */
            pos += ws ? ws : 1;
        if (add_token(s, pos, &len))
            return AS_ERR;
    }
    return AS_OK;
}

/* Llama 3's (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 * ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ as
 * unicode_regex_split_custom_llama3; Qwen 2's has \p{N} (digits = 1), Qwen
 * 3.5's also [\p{L}\p{M}] for \p{L} (marks). */
static int split_llama3(span *s, int digits, bool marks)
{
    size_t len;
    unsigned letter = marks ? F_L | F_M : F_L;
    for (size_t pos = s->ini; pos < s->end;) {
        uint32_t c = cpt(s, pos);
        unsigned f = flags(s, pos);
        size_t e = contraction(s, pos, true);
        if (e) {
            if (add_token(s, e, &len))
                return AS_ERR;
            pos += len;
            continue;
        }
        if (!(c == '\r' || c == '\n' || (f & F_N)) && ((f & letter) || (flags(s, pos + 1) & letter))) {
            pos++;
            while (flags(s, pos) & letter)
                pos++;
            if (add_token(s, pos, &len))
                return AS_ERR;
            continue;
        }
        if (f & F_N) {
            for (size_t ini = pos; flags(s, pos) & F_N;)
                if (++pos - ini >= (size_t)digits) {
                    if (add_token(s, pos, &len))
                        return AS_ERR;
                    ini = pos;
                }
            if (add_token(s, pos, &len))
                return AS_ERR;
            continue;
        }
        unsigned f2 = c == ' ' ? flags(s, pos + 1) : f, stop = F_WS | letter | F_N;
        if (!(f2 & stop) && f) {
            pos += c == ' ';
            while (!(f2 & stop) && f2)
                f2 = flags(s, ++pos);
            for (uint32_t c2 = cpt(s, pos); c2 == '\r' || c2 == '\n';)
                c2 = cpt(s, ++pos);
            if (add_token(s, pos, &len))
                return AS_ERR;
            continue;
        }
        size_t ws = 0, last_rn = 0;
        while (flags(s, pos + ws) & F_WS) {
            uint32_t c2 = cpt(s, pos + ws);
            if (c2 == '\r' || c2 == '\n')
                last_rn = pos + ws + 1;
            ws++;
        }
        if (last_rn > 0) /* \s*[\r\n]+ */
            pos = last_rn;
        else if (ws > 1 && cpt(s, pos + ws) != OUT) /* \s+(?!\S) */
            pos += ws - 1;
        else /* \s+, or no match */
            pos += ws ? ws : 1;
        if (add_token(s, pos, &len))
            return AS_ERR;
    }
    return AS_OK;
}

/* [^\n]+|[\n]+ as unicode_regex_split_custom_newlines. */
static int split_newlines(span *s)
{
    size_t len;
    for (size_t pos = s->ini; pos < s->end;) {
        bool nl = s->c[pos].cp == '\n';
        while (pos < s->end && (s->c[pos].cp == '\n') == nl)
            pos++;
        if (add_token(s, pos, &len))
            return AS_ERR;
    }
    return AS_OK;
}

/* Which hand-written splitter llama.cpp's unicode_regex_split_custom runs
 * for a pattern (it compares the strings). */
enum { CUSTOM_NONE, CUSTOM_GPT2, CUSTOM_LLAMA3, CUSTOM_QWEN2, CUSTOM_QWEN35, CUSTOM_NEWLINES };

static int custom_of(const char *rx)
{
    static const struct {
        const char *rx;
        int which;
    } known[] = {
        {"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)", CUSTOM_GPT2},
        {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
         "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
         CUSTOM_LLAMA3},
        {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
         "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
         CUSTOM_LLAMA3},
        {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
         "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
         CUSTOM_QWEN2},
        {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| "
         "?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
         CUSTOM_QWEN35},
        {"[^\\n]+|[\\n]+", CUSTOM_NEWLINES},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(rx, known[i].rx) == 0)
            return known[i].which;
    return CUSTOM_NONE;
}

/* ---------------------------------------------------------------- patterns for the engine */

/* llama.cpp's k_ucat_enum / k_ucat_cpt / k_ucat_map. */
static const struct {
    const char *name;
    uint8_t byte;
    const char *ascii;
} UCAT[] = {
    {"\\p{N}", 0xD1, "0-9"},
    {"\\p{L}", 0xD2, "A-Za-z"},
    {"\\p{P}", 0xD3, "!-#%-*,-/:-;?-@\\[-\\]_\\{\\}"},
    {"\\p{M}", 0xD4, ""},
    {"\\p{S}", 0xD5, "\\$\\+<->^`\\|~"},
    {"\\p{Lu}", 0xD2, "A-Za-z"},
    {"\\p{Ll}", 0xD2, "A-Za-z"},
    {"\\p{Lt}", 0xD2, "A-Za-z"},
    {"\\p{Lm}", 0xD2, "A-Za-z"},
    {"\\p{Lo}", 0xD2, "A-Za-z"},
};
#define N_UCAT (sizeof UCAT / sizeof UCAT[0])

static bool uses_categories(const char *rx)
{
    for (size_t i = 0; i < N_UCAT; i++)
        if (strstr(rx, UCAT[i].name))
            return true;
    return false;
}

/* The pattern over collapsed text, as unicode_regex_split rewrites it:
 * \p{X} becomes [<X's byte><X's ASCII members>] (without the brackets
 * inside a class). malloc'd; *len set (it may hold bytes >= 0x80). */
static char *collapse_regex(const char *rx, size_t *len)
{
    size_t n = strlen(rx);
    char *out = malloc(n * 8 + 1);
    size_t k = 0;
    bool inside = false;
    for (size_t i = 0; out && i < n; i++) {
        if (rx[i] == '[' && (i == 0 || rx[i - 1] != '\\')) {
            out[k++] = '[', inside = true;
            continue;
        }
        if (inside && rx[i] == ']' && rx[i - 1] != '\\') {
            out[k++] = ']', inside = false;
            continue;
        }
        if (rx[i] == '\\' && i + 3 < n && rx[i + 1] == 'p' && rx[i + 2] == '{') {
            const char *close = strchr(rx + i + 3, '}');
            size_t cl = close ? (size_t)(close - rx) : 0;
            size_t u = N_UCAT;
            if (close && cl <= i + 10)
                for (u = 0; u < N_UCAT; u++)
                    if (strlen(UCAT[u].name) == cl - i + 1 && memcmp(UCAT[u].name, rx + i, cl - i + 1) == 0)
                        break;
            if (u < N_UCAT) {
                if (!inside)
                    out[k++] = '[';
                out[k++] = (char)UCAT[u].byte;
                memcpy(out + k, UCAT[u].ascii, strlen(UCAT[u].ascii));
                k += strlen(UCAT[u].ascii);
                if (!inside)
                    out[k++] = ']';
                i = cl;
                continue;
            }
        }
        out[k++] = rx[i];
    }
    if (out)
        out[k] = '\0';
    *len = k;
    return out;
}

int as_tok_pre_compile(as_tokenizer *t, as_error *err)
{
    const as_tok_pre *p = t->pre;
    size_t n = 0;
    while (p->regex[n])
        n++;
    if (!(t->rx = calloc(n ? n : 1, sizeof *t->rx)))
        return as_tok_oom(err);
    t->n_rx = n;
    for (size_t i = 0; i < n; i++) {
        if (custom_of(p->regex[i]) != CUSTOM_NONE)
            continue;
        bool collapsed = uses_categories(p->regex[i]);
        size_t len = strlen(p->regex[i]);
        char *pat = collapsed ? collapse_regex(p->regex[i], &len) : NULL;
        if (collapsed && !pat)
            return as_tok_oom(err);
        t->rx[i].re = as_tok_regex_compile(pat ? pat : p->regex[i], len, !collapsed, err);
        t->rx[i].collapsed = collapsed;
        free(pat);
        if (!t->rx[i].re) {
            as_error_prefix(err, "pre-tokenizer '%s'", p->type);
            return AS_ERR;
        }
    }
    return AS_OK;
}

void as_tok_pre_free(as_tokenizer *t)
{
    for (size_t i = 0; t->rx && i < t->n_rx; i++)
        as_tok_regex_free(t->rx[i].re);
    free(t->rx);
}

/* ---------------------------------------------------------------- splitting */

/* The symbols std::regex sees for code point c. */
static uint32_t collapsed_symbol(const as_tok_cp *c)
{
    static const uint8_t byte_of[8] = {
        [AS_UC_UNDEFINED] = 0xD0, [AS_UC_NUMBER] = 0xD1, [AS_UC_LETTER] = 0xD2, [AS_UC_SEPARATOR] = 0xD0,
        [AS_UC_MARK] = 0xD4,      [AS_UC_PUNCT] = 0xD3,  [AS_UC_SYMBOL] = 0xD5, [AS_UC_CONTROL] = 0xD0,
    };
    if (c->cp < 128)
        return c->cp;
    return c->ws ? 0x0B : byte_of[c->cls];
}

static uint32_t wide_symbol(const as_tok_cp *c)
{
    if (c->cp > 0x10FFFF)
        return 0xFFFD;
    return c->cp > 0x7F && c->ws ? 0x0B : c->cp;
}

/* One pattern over every piece [pieces[i-1], pieces[i]) -> pieces2, as
 * unicode_regex_split_stl: each match is a piece, and so is the text
 * before it and after the last. */
static int split_regex(const as_tokenizer *t, size_t r, work *w, size_t m, as_error *err)
{
    const uint32_t *sym = t->rx[r].collapsed ? w->sym_c : w->sym_w;
    span s = {w->cps, 0, 0, 0, w};
    for (size_t i = 0; i < w->npieces; i++) {
        size_t a = i ? w->pieces[i - 1] : 0, b = w->pieces[i], len;
        s.ini = s.prev = a, s.end = b;
        for (size_t at = a, ms, me; at < b; at = me) {
            int rc = as_tok_regex_search(t->rx[r].re, sym, at, b, &ms, &me, &w->rxs);
            if (rc < 0)
                return as_tok_oom(err);
            if (rc == 0)
                break;
            if ((ms > at && add_token(&s, ms, &len)) || add_token(&s, me, &len))
                return as_tok_oom(err);
        }
        if (add_token(&s, b, &len))
            return as_tok_oom(err);
    }
    return AS_OK;
}

static int split_custom(int which, work *w, as_error *err)
{
    span s = {w->cps, 0, 0, 0, w};
    for (size_t i = 0; i < w->npieces; i++) {
        s.ini = s.prev = i ? w->pieces[i - 1] : 0;
        s.end = w->pieces[i];
        int rc = which == CUSTOM_GPT2     ? split_gpt2(&s)
                 : which == CUSTOM_LLAMA3 ? split_llama3(&s, 3, false)
                 : which == CUSTOM_QWEN2  ? split_llama3(&s, 1, false)
                 : which == CUSTOM_QWEN35 ? split_llama3(&s, 1, true)
                                          : split_newlines(&s);
        if (rc)
            return as_tok_oom(err);
    }
    return AS_OK;
}

int as_tok_pre_split(const as_tokenizer *t, work *w, size_t m, as_error *err)
{
    w->npieces = 0;
    bool have_c = false, have_w = false;
    if (m == 0)
        return AS_OK;
    if (!reserve_size(&w->pieces, &w->cappieces, 1))
        return as_tok_oom(err);
    w->pieces[w->npieces++] = m;
    for (size_t r = 0; r < t->n_rx; r++) {
        w->npieces2 = 0;
        int which = custom_of(t->pre->regex[r]);
        if (which == CUSTOM_NONE) {
            /* symbols are per fragment: computed on first use */
            bool *have = t->rx[r].collapsed ? &have_c : &have_w;
            if (!*have) {
                uint32_t **dst = t->rx[r].collapsed ? &w->sym_c : &w->sym_w;
                size_t *cap = t->rx[r].collapsed ? &w->capsym_c : &w->capsym_w;
                if (!reserve_u32(dst, cap, m + 1))
                    return as_tok_oom(err);
                for (size_t i = 0; i < m; i++)
                    (*dst)[i] = t->rx[r].collapsed ? collapsed_symbol(&w->cps[i]) : wide_symbol(&w->cps[i]);
                *have = true;
            }
        }
        int rc = which == CUSTOM_NONE ? split_regex(t, r, w, m, err) : split_custom(which, w, err);
        if (rc)
            return AS_ERR;
        size_t *tmp = w->pieces, tcap = w->cappieces;
        w->pieces = w->pieces2, w->cappieces = w->cappieces2, w->npieces = w->npieces2;
        w->pieces2 = tmp, w->cappieces2 = tcap;
    }
    return AS_OK;
}
