local M = {
