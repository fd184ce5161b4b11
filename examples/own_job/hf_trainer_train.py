"""Pre-train a tiny Llama-style causal language model with the Hugging Face `Trainer`, the way
the `run_clm` example does: fixed-length token blocks, `Trainer` + `TrainingArguments`, no
code of our own in the training loop. One process per device, started by torchrun (the
`Trainer` picks the distributed setup up from the environment).

    torchrun --nproc-per-node 2 hf_trainer_train.py --max-steps 40

CPU (gloo) unless GPUs are visible. The model is built from a config in code (random weights,
nothing downloaded) and the token blocks are synthetic (each continues a counting pattern with
a random start and stride), made in memory from a fixed seed, so the loss falls and every run
sees the same samples.

--slow-rank R --slow-ms M makes rank R's data loading M ms slower per batch (its Dataset
"tokenizes" each sample slowly); --grad-accum K steps the optimizer every K batches.
"""

from __future__ import annotations

import argparse
import time

import torch
from torch.utils.data import Dataset
from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments


class CountingBlocks(Dataset[dict[str, torch.Tensor]]):
    """Blocks start, start+stride, ... (mod vocab), as run_clm's `group_texts` makes them:
    every block is full, so the attention mask is all ones and the labels are the inputs."""

    def __init__(self, size: int, block: int, vocab: int, decode_ms: float = 0.0) -> None:
        g = torch.Generator().manual_seed(1234)
        start = torch.randint(0, vocab, (size, 1), generator=g)
        stride = torch.randint(1, 5, (size, 1), generator=g)
        self.ids = (start + stride * torch.arange(block)) % vocab
        self.decode_ms = decode_ms

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        if self.decode_ms:
            time.sleep(self.decode_ms / 1000)  # a slow tokenizer
        ids = self.ids[index]
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--max-steps", type=int, default=40, help="optimizer steps")
    p.add_argument("--batch-size", type=int, default=8, help="per process")
    p.add_argument("--block-size", type=int, default=32, help="tokens per sample")
    p.add_argument("--dataset-size", type=int, default=4096)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--grad-accum", type=int, default=1, help="batches per optimizer step")
    p.add_argument("--num-workers", type=int, default=0, help="DataLoader worker processes")
    p.add_argument("--output-dir", default="hf_trainer_out")
    p.add_argument("--slow-rank", type=int, default=-1, help="this rank loads its data slowly")
    p.add_argument("--slow-ms", type=float, default=0.0, help="extra ms per batch on --slow-rank")
    return p.parse_args()


def main() -> None:
    args = parse_args()
    training_args = TrainingArguments(
        output_dir=args.output_dir,
        max_steps=args.max_steps,
        per_device_train_batch_size=args.batch_size,
        gradient_accumulation_steps=args.grad_accum,
        learning_rate=args.lr,
        warmup_steps=5,
        logging_steps=10,
        save_strategy="no",
        report_to=[],
        dataloader_num_workers=args.num_workers,
        use_cpu=not torch.cuda.is_available(),
        seed=0,
    )
    vocab = 256
    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=args.block_size,
    )
    model = LlamaForCausalLM(config)

    slow = training_args.process_index == args.slow_rank
    decode_ms = args.slow_ms / args.batch_size if slow else 0.0
    train_dataset = CountingBlocks(args.dataset_size, args.block_size, vocab, decode_ms)

    trainer = Trainer(model=model, args=training_args, train_dataset=train_dataset)
    result = trainer.train()
    if trainer.is_world_process_zero():
        print(f"done: {result.global_step} steps, train loss {result.training_loss:.4f}")


if __name__ == "__main__":
    main()
