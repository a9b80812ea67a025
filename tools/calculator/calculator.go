// Package calculator is the calculator toolkit: arithmetic an agent's model
// should not do in its head (Agno's CalculatorTools): add, subtract,
// multiply, divide, exponentiate, factorial, is_prime and square_root.
// Results are JSON objects {"operation", "result"}; a division by zero, a
// negative square root or a factorial too large is an error the model
// reads.
package calculator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"

	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/toolkit"
)

// The tools' names.
const (
	AddName          = "add"
	SubtractName     = "subtract"
	MultiplyName     = "multiply"
	DivideName       = "divide"
	ExponentiateName = "exponentiate"
	FactorialName    = "factorial"
	IsPrimeName      = "is_prime"
	SquareRootName   = "square_root"
)

// Names lists the toolkit's tools, in order.
func Names() []string {
	return []string{AddName, SubtractName, MultiplyName, DivideName, ExponentiateName, FactorialName, IsPrimeName, SquareRootName}
}

// maxFactorial bounds factorial's argument: 170! is the largest that fits a
// float64, and the answer is exact below it.
const maxFactorial = 170

type pair struct {
	A float64 `json:"a" jsonschema:"the first number"`
	B float64 `json:"b" jsonschema:"the second number"`
}

type single struct {
	N float64 `json:"n" jsonschema:"the number"`
}

type integer struct {
	N int64 `json:"n" jsonschema:"a whole number"`
}

// result is a tool's answer.
type result struct {
	Operation string `json:"operation"`
	Result    any    `json:"result"`
}

// number renders a float as JSON does, refusing what JSON cannot hold.
func number(op string, v float64) (result, error) {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return result{}, fmt.Errorf("%s: the result is not a finite number", op)
	}
	return result{Operation: op, Result: v}, nil
}

// Tools returns the toolkit's tools.
func Tools() []tool.Tool {
	binary := func(name, description string, fn func(a, b float64) (float64, error)) tool.Tool {
		return tool.MustNew(tool.Config{Name: name, Description: description}, func(_ context.Context, p pair) (result, error) {
			v, err := fn(p.A, p.B)
			if err != nil {
				return result{}, err
			}
			return number(name, v)
		})
	}
	return []tool.Tool{
		binary(AddName, "Add two numbers: a + b.", func(a, b float64) (float64, error) { return a + b, nil }),
		binary(SubtractName, "Subtract b from a: a - b.", func(a, b float64) (float64, error) { return a - b, nil }),
		binary(MultiplyName, "Multiply two numbers: a × b.", func(a, b float64) (float64, error) { return a * b, nil }),
		binary(DivideName, "Divide a by b: a / b.", func(a, b float64) (float64, error) {
			if b == 0 {
				return 0, errors.New("divide: division by zero is undefined")
			}
			return a / b, nil
		}),
		binary(ExponentiateName, "Raise a to the power b: a^b.", func(a, b float64) (float64, error) { return math.Pow(a, b), nil }),
		tool.MustNew(tool.Config{Name: FactorialName, Description: "The factorial of a whole number n (0 ≤ n ≤ 170): n!."},
			func(_ context.Context, p integer) (result, error) {
				if p.N < 0 || p.N > maxFactorial {
					return result{}, fmt.Errorf("factorial: n must be from 0 to %d, got %d", maxFactorial, p.N)
				}
				f := new(big.Int).MulRange(1, p.N)
				if p.N == 0 {
					f = big.NewInt(1)
				}
				if f.IsInt64() {
					return result{Operation: FactorialName, Result: f.Int64()}, nil
				}
				return result{Operation: FactorialName, Result: f.String()}, nil
			}),
		tool.MustNew(tool.Config{Name: IsPrimeName, Description: "Whether a whole number n is prime."},
			func(_ context.Context, p integer) (result, error) {
				return result{Operation: IsPrimeName + " " + strconv.FormatInt(p.N, 10), Result: p.N > 1 && big.NewInt(p.N).ProbablyPrime(20)}, nil
			}),
		tool.MustNew(tool.Config{Name: SquareRootName, Description: "The square root of a non-negative number n."},
			func(_ context.Context, p single) (result, error) {
				if p.N < 0 {
					return result{}, fmt.Errorf("square_root: %v is negative; its square root is not a real number", p.N)
				}
				return number(SquareRootName, math.Sqrt(p.N))
			}),
	}
}

// Settings are the calculator's settings: it has none of its own, only
// the keys every toolkit takes (toolkit.Options).
type Settings struct{}

// Definition declares the toolkit for config files, as calculator.
func Definition() toolkit.Definition {
	return toolkit.Define("calculator", "Arithmetic: add, subtract, multiply, divide, exponentiate, factorial, is_prime, square_root.",
		Names(), func(context.Context, Settings) (*toolkit.Toolkit, error) {
			return &toolkit.Toolkit{Name: "calculator", Tools: Tools()}, nil
		})
}
