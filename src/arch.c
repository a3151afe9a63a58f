/* arch: the one table of architectures attnscope runs. */
#include "attnscope/arch.h"

#include <stdio.h>
#include <string.h>

extern const as_arch as_arch_gpt2, as_arch_llama, as_arch_qwen2, as_arch_qwen3, as_arch_phi3, as_arch_gemma,
    as_arch_gemma2, as_arch_gemma3, as_arch_bert, as_arch_nomic_bert, as_arch_transformer, as_arch_t5, as_arch_t5encoder, as_arch_vit;
extern const as_arch as_arch_qwen2moe;
extern const as_arch as_arch_deepseek2;

static const as_arch *const registry[] = {
    &as_arch_gpt2,
    &as_arch_llama,
    &as_arch_qwen2,
    &as_arch_qwen2moe,
    &as_arch_deepseek2,
    &as_arch_qwen3,
    &as_arch_phi3,
    &as_arch_gemma,
    &as_arch_gemma2,
    &as_arch_gemma3,
    &as_arch_bert,
    &as_arch_nomic_bert,
    &as_arch_transformer,
    &as_arch_t5,
    &as_arch_t5encoder,
    &as_arch_vit,
};

#define N_ARCH (sizeof registry / sizeof registry[0])

const as_arch *as_arch_find(const char *gguf_name)
{
    for (size_t i = 0; i < N_ARCH; i++)
        if (!strcmp(registry[i]->gguf_name, gguf_name))
            return registry[i];
    return NULL;
}

void as_arch_names(char *out, size_t cap)
{
    size_t off = 0;
    out[0] = '\0';
    for (size_t i = 0; i < N_ARCH && off < cap; i++)
        off += (size_t)snprintf(out + off, cap - off, "%s%s", i == 0 ? "" : i + 1 < N_ARCH ? ", " : " and ",
                                registry[i]->gguf_name);
}
