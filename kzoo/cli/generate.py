"""``kzoo generate``: continue prompts with a causal LM (GPT)."""

HELP = "continue text prompts with a GPT model (greedy, top-k, top-p or beam)"
EXAMPLES = """
  kzoo generate --model runs/gpt --prompt "The history of" --max-length 40
  kzoo generate --model runs/gpt --prompt "Once" --sampler top_p --p 0.9 --seed 1
"""

SAMPLERS = ("greedy", "top_k", "top_p", "beam")


def add_arguments(parser):
    parser.add_argument("--model", required=True,
                        help="a GPT folder (kzoo pretrain gpt) or a Hugging Face "
                             "GPT-2 folder")
    parser.add_argument("--prompt", action="append", required=True,
                        help="repeat for several prompts")
    parser.add_argument("--max-length", type=int, default=40,
                        help="tokens in all, prompt included")
    parser.add_argument("--sampler", choices=SAMPLERS, default="greedy")
    parser.add_argument("--k", type=int, default=10, help="top_k")
    parser.add_argument("--p", type=float, default=0.9, help="top_p")
    parser.add_argument("--num-beams", type=int, default=4, help="beam")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=None)


def _sampler(args):
    from kzoo import samplers

    if args.sampler == "greedy":
        return "greedy"
    if args.sampler == "top_k":
        return samplers.TopKSampler(k=args.k, temperature=args.temperature,
                                    seed=args.seed)
    if args.sampler == "top_p":
        return samplers.TopPSampler(p=args.p, temperature=args.temperature,
                                    seed=args.seed)
    return samplers.BeamSampler(num_beams=args.num_beams)


def run(args):
    import kzoo
    from kzoo.cli.loading import load_task, saved_task_class

    if saved_task_class(args.model) is None:
        # A bare backbone (a Hugging Face folder): its family's causal LM.
        model = kzoo.models.CausalLM.from_preset(args.model)
    else:
        model = load_task(args.model, (kzoo.models.CausalLM,), "kzoo generate")
    for text in model.generate(args.prompt, max_length=args.max_length,
                               sampler=_sampler(args)):
        print(text)
    return 0
