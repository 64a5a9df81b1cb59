"""``kzoo generate``: continue prompts with a causal LM (GPT)."""

import sys

HELP = "continue text prompts with a GPT model (greedy, top-k, top-p or beam)"
EXAMPLES = """
  kzoo generate --model runs/gpt --prompt "The history of" --max-new-tokens 30
  kzoo generate --model runs/gpt --prompt "Once" --sampler top_p --p 0.9 --seed 1 --stream
  kzoo generate --model runs/gpt --prompt "Once" --sampler beam --num-beams 4 \\
      --num-return-sequences 2 --no-repeat-ngram-size 3 --length-penalty 0.8
"""

SAMPLERS = ("greedy", "top_k", "top_p", "beam")


def _early_stopping(value):
    choices = {"true": True, "false": False, "never": "never"}
    if value.lower() not in choices:
        raise ValueError(f"--early-stopping takes true, false or never, got {value!r}")
    return choices[value.lower()]


def add_arguments(parser):
    parser.add_argument("--model", required=True,
                        help="a GPT folder (kzoo pretrain gpt) or a Hugging Face "
                             "GPT-2 folder")
    parser.add_argument("--prompt", action="append", required=True,
                        help="repeat for several prompts")
    parser.add_argument("--max-length", type=int, default=None,
                        help="tokens in all, prompt included (default 40 when "
                             "--max-new-tokens is not given)")
    parser.add_argument("--max-new-tokens", type=int, default=None,
                        help="new tokens per prompt (takes precedence over "
                             "--max-length)")
    parser.add_argument("--min-new-tokens", type=int, default=0,
                        help="no end token before this many new tokens")
    parser.add_argument("--sampler", choices=SAMPLERS, default="greedy")
    parser.add_argument("--k", type=int, default=10, help="top_k")
    parser.add_argument("--p", type=float, default=0.9, help="top_p")
    parser.add_argument("--num-beams", type=int, default=4, help="beam")
    parser.add_argument("--length-penalty", type=float, default=1.0,
                        help="beam: a finished beam's score is its log-probability "
                             "over new_length ** length_penalty")
    parser.add_argument("--early-stopping", type=_early_stopping, default=False,
                        help="beam: true, false or never (as in transformers)")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--repetition-penalty", type=float, default=1.0,
                        help="above 1 discourages tokens already in the text")
    parser.add_argument("--no-repeat-ngram-size", type=int, default=0,
                        help="no n-gram of this size occurs twice")
    parser.add_argument("--stop-string", action="append", default=None,
                        help="end a sequence when its text reaches this string "
                             "(repeat for several)")
    parser.add_argument("--num-return-sequences", type=int, default=1,
                        help="sequences per prompt (sampling or beam)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--stream", action="store_true",
                        help="print the text as it is generated (one prompt at "
                             "a time; greedy or sampling)")


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
    return samplers.BeamSampler(num_beams=args.num_beams,
                                length_penalty=args.length_penalty,
                                early_stopping=args.early_stopping)


def run(args):
    import kzoo
    from kzoo.cli.loading import load_task, saved_task_class

    if saved_task_class(args.model) is None:
        # A bare backbone (a Hugging Face folder): its family's causal LM.
        model = kzoo.models.CausalLM.from_preset(args.model)
    else:
        model = load_task(args.model, (kzoo.models.CausalLM,), "kzoo generate")
    max_length = args.max_length
    if max_length is None and args.max_new_tokens is None:
        max_length = 40
    controls = dict(max_length=max_length, sampler=_sampler(args),
                    max_new_tokens=args.max_new_tokens,
                    min_new_tokens=args.min_new_tokens,
                    repetition_penalty=args.repetition_penalty,
                    no_repeat_ngram_size=args.no_repeat_ngram_size,
                    num_return_sequences=args.num_return_sequences,
                    stop_strings=args.stop_string)
    if args.stream:
        for prompt in args.prompt:
            sys.stdout.write(prompt)
            sys.stdout.flush()
            for piece in model.generate_stream(prompt, **controls):
                sys.stdout.write(piece)
                sys.stdout.flush()
            sys.stdout.write("\n")
        return 0
    for text in model.generate(args.prompt, **controls):
        print(text)
    return 0
